"""Flux pipelines in the flow-matching family: a LoRA on ``FluxTransformer2DModel``.

After diffusers' ``examples/dreambooth/train_dreambooth_lora_flux.py``: the VAE's latents shifted and
scaled as the pipeline's decoder undoes, packed into 2x2 patches with their position ids; the caption as
the T5 encoder's states (``FLUX_TEXT_TOKENS`` tokens, the pipeline's default length) and CLIP's pooled
output; the transformer given the sigma as its timestep and, for guidance-distilled models (FLUX.1-dev),
the guidance the pipeline generates with by default. The objective, the sigma density and the weighting
are the family's (:mod:`sciir.training.flow_matching`), the encodings :mod:`sciir.training.pooled_captions`'.
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
    from diffusers.models.transformers.transformer_flux import FluxTransformer2DModel
    from diffusers.pipelines.flux.pipeline_flux import FluxPipeline

# T5 tokens of a caption: FluxPipeline's default max_sequence_length, so training sees prompts as generation does.
FLUX_TEXT_TOKENS = 512
# FluxPipeline's default guidance_scale, given to guidance-distilled transformers during training.
FLUX_GUIDANCE = 3.5


def encode_flux_captions(pipe: FluxPipeline, captions: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """The T5 states and CLIP pooled outputs of captions, as ``FluxPipeline.encode_prompt`` makes them."""
    device = pipe.vae.device
    clip_ids = token_ids(pipe.tokenizer, captions, pipe.tokenizer.model_max_length, device)
    t5_ids = token_ids(pipe.tokenizer_2, captions, FLUX_TEXT_TOKENS, device)
    pooled = pipe.text_encoder(clip_ids, output_hidden_states=False).pooler_output
    return pipe.text_encoder_2(t5_ids, output_hidden_states=False)[0], pooled


def flux_loss_at(
    transformer: FluxTransformer2DModel,
    examples: EncodedPooledExamples,
    indices: torch.Tensor,
    noise: torch.Tensor,
    sigmas: torch.Tensor,
    weighting: LossWeighting,
) -> torch.Tensor:
    """The weighted flow-matching loss of the examples at ``indices`` for the given noise and sigmas."""
    import torch
    from diffusers import FluxPipeline

    latents = examples.latents[indices]
    batch, _, height, width = latents.shape
    states = examples.caption_embeds[indices]
    guidance = None
    if transformer.config["guidance_embeds"]:
        guidance = torch.full((batch,), FLUX_GUIDANCE, device=latents.device)
    image_ids = FluxPipeline._prepare_latent_image_ids(
        batch, height // 2, width // 2, latents.device, latents.dtype
    )

    def predict(tokens: torch.Tensor) -> torch.Tensor:
        return transformer(
            hidden_states=tokens,
            timestep=sigmas,  # the pipeline passes timestep / 1000, that is the sigma itself
            guidance=guidance,
            pooled_projections=examples.pooled_captions[indices],
            encoder_hidden_states=states,
            txt_ids=torch.zeros(states.shape[1], 3, device=latents.device, dtype=latents.dtype),
            img_ids=image_ids,
            return_dict=False,
        )[0]

    return flow_loss(predict, latents, noise, sigmas, weighting)


def load_recipe(model_path: str | Path, config: LoraTrainConfig) -> LoraRecipe:
    """The flow-matching recipe for the Flux pipeline at ``model_path``, its transformer carrying a fresh
    LoRA. Image sides must be multiples of twice the VAE's downsampling factor (16 for FLUX.1's VAE), for
    the 2x2 patches."""
    from diffusers import FluxPipeline

    pipe = FluxPipeline.from_pretrained(model_path, local_files_only=True)
    return pooled_caption_recipe(
        pipe,
        (pipe.vae, pipe.text_encoder, pipe.text_encoder_2),
        config,
        lambda captions: encode_flux_captions(pipe, captions),
        lambda examples, indices, noise, sigmas: flux_loss_at(
            pipe.transformer, examples, indices, noise, sigmas, config.loss_weighting
        ),
    )
