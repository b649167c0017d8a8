"""Stable Diffusion 3 pipelines in the flow-matching family: a LoRA on ``SD3Transformer2DModel``.

After diffusers' ``examples/dreambooth/train_dreambooth_lora_sd3.py``: the VAE's latents shifted and
scaled, fed to the transformer as they are (it patches them itself); the caption as the two CLIP
encoders' penultimate states side by side, padded to the T5 width and followed by the T5 states
(``SD3_TEXT_TOKENS`` tokens, the pipeline's default length), and both CLIP projections as the pooled
caption; the timestep on the scheduler's scale (sigma x 1000), as the pipeline passes it. The objective,
density and weighting are the family's (:mod:`sciir.training.flow_matching`), the encodings
:mod:`sciir.training.pooled_captions`'.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sciir.training.config import LoraTrainConfig, LossWeighting
from sciir.training.flow_matching import flow_loss
from sciir.training.pooled_captions import EncodedPooledExamples, pooled_caption_recipe, token_ids
from sciir.training.recipe import LoraRecipe

if TYPE_CHECKING:
    import torch

    # From their modules: `from diffusers import ...` gives a type checker diffusers' dummy objects.
    from diffusers.models.transformers.transformer_sd3 import SD3Transformer2DModel
    from diffusers.pipelines.stable_diffusion_3.pipeline_stable_diffusion_3 import StableDiffusion3Pipeline

# T5 tokens of a caption: StableDiffusion3Pipeline's default max_sequence_length.
SD3_TEXT_TOKENS = 256


def encode_sd3_captions(
    pipe: StableDiffusion3Pipeline, captions: list[str]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Caption states and pooled captions as ``StableDiffusion3Pipeline.encode_prompt`` makes them (zeros
    for the T5 part of a pipeline loaded without its T5 encoder, as the pipeline does)."""
    import torch
    import torch.nn.functional as functional

    device = pipe.vae.device
    states, pooled = [], []
    for tokenizer, encoder in ((pipe.tokenizer, pipe.text_encoder), (pipe.tokenizer_2, pipe.text_encoder_2)):
        output = encoder(
            token_ids(tokenizer, captions, tokenizer.model_max_length, device), output_hidden_states=True
        )
        states.append(output.hidden_states[-2])
        pooled.append(output.text_embeds)
    clip = torch.cat(states, dim=-1)
    if pipe.text_encoder_3 is None:
        width = pipe.transformer.config.joint_attention_dim
        t5 = torch.zeros(
            len(captions), pipe.tokenizer.model_max_length, width, device=device, dtype=clip.dtype
        )
    else:
        t5 = pipe.text_encoder_3(token_ids(pipe.tokenizer_3, captions, SD3_TEXT_TOKENS, device))[0]
    clip = functional.pad(clip, (0, t5.shape[-1] - clip.shape[-1]))
    return torch.cat([clip, t5], dim=-2), torch.cat(pooled, dim=-1)


def sd3_loss_at(
    transformer: SD3Transformer2DModel,
    examples: EncodedPooledExamples,
    indices: torch.Tensor,
    noise: torch.Tensor,
    sigmas: torch.Tensor,
    weighting: LossWeighting,
    train_timesteps: int = 1000,
) -> torch.Tensor:
    """The weighted flow-matching loss of the examples at ``indices`` for the given noise and sigmas (the
    transformer is given them on the scheduler's scale of ``train_timesteps``)."""
    latents = examples.latents[indices]
    timesteps = sigmas * train_timesteps

    def predict(noisy: torch.Tensor) -> torch.Tensor:
        return transformer(
            hidden_states=noisy,
            timestep=timesteps,
            encoder_hidden_states=examples.caption_embeds[indices],
            pooled_projections=examples.pooled_captions[indices],
            return_dict=False,
        )[0]

    return flow_loss(predict, latents, noise, sigmas, weighting, layout=lambda unpacked: unpacked)


def load_recipe(model_path: str | Path, config: LoraTrainConfig) -> LoraRecipe:
    """The flow-matching recipe for the SD3 pipeline at ``model_path``, its transformer carrying a fresh
    LoRA."""
    from diffusers import StableDiffusion3Pipeline

    pipe = StableDiffusion3Pipeline.from_pretrained(model_path, local_files_only=True)
    encoders = (pipe.vae, pipe.text_encoder, pipe.text_encoder_2, pipe.text_encoder_3)
    steps = pipe.scheduler.config.num_train_timesteps
    return pooled_caption_recipe(
        pipe,
        tuple(model for model in encoders if model is not None),
        config,
        lambda captions: encode_sd3_captions(pipe, captions),
        lambda examples, indices, noise, sigmas: sd3_loss_at(
            pipe.transformer, examples, indices, noise, sigmas, config.loss_weighting, steps
        ),
    )
