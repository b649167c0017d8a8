"""A tiny Qwen-Image pipeline with random weights, built locally (nothing from a hub).

The flow-matching counterpart of :mod:`sciir.training.tiny_stable_diffusion`: the classes of diffusers' ``QwenImagePipeline``
(``QwenImageTransformer2DModel``, ``AutoencoderKLQwenImage``, a Qwen2.5-VL text encoder, a Qwen2
tokenizer, ``FlowMatchEulerDiscreteScheduler``) at about a megabyte, saved in the same folder
layout, so whatever loads the real Qwen-Image loads this one. The tokenizer is byte-level without merges
(one token per byte) plus the chat-template specials the pipeline's prompt template uses.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from sciir.training.saved_pipelines import ensure_marked, holds, save_marked

if TYPE_CHECKING:
    # From their modules: `from diffusers import ...` gives a type checker diffusers' dummy objects.
    from diffusers.models.autoencoders.autoencoder_kl_qwenimage import AutoencoderKLQwenImage
    from diffusers.models.transformers.transformer_qwenimage import QwenImageTransformer2DModel
    from diffusers.pipelines.qwenimage.pipeline_qwenimage import QwenImagePipeline
    from diffusers.schedulers.scheduling_flow_match_euler_discrete import FlowMatchEulerDiscreteScheduler
    from transformers import Qwen2_5_VLForConditionalGeneration, Qwen2Tokenizer

MARKER_FILE = "sciir_tiny_flow.json"
# Bump when a configuration below changes, so copies saved by an older version are rebuilt.
TINY_FLOW_FORMAT_VERSION = 1
LATENT_CHANNELS = 4
# One spatial downsampling in the VAE and 2x2 patches in the transformer: sides must be multiples of 4.
VAE_SCALE_FACTOR = 2
TEXT_HIDDEN_SIZE = 16
# Qwen2.5-VL's chat-template tokens, which QwenImagePipeline's prompt template is written in.
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")


def qwen_tokenizer_vocab() -> dict[str, int]:
    """Every byte-level symbol, then the specials."""
    from tokenizers.pre_tokenizers import ByteLevel

    tokens = sorted(ByteLevel.alphabet()) + list(SPECIAL_TOKENS)
    return {token: index for index, token in enumerate(tokens)}


def build_qwen_tokenizer() -> Qwen2Tokenizer:
    """A Qwen2 tokenizer over :func:`qwen_tokenizer_vocab` with no merges (every text is encodable)."""
    from transformers import Qwen2Tokenizer

    tokenizer = Qwen2Tokenizer(vocab=qwen_tokenizer_vocab(), merges=[])
    # Special, so the template's markers are one token each rather than split into bytes.
    tokenizer.add_special_tokens({"additional_special_tokens": list(SPECIAL_TOKENS[1:])})
    return tokenizer


def _text_encoder(tokenizer: Qwen2Tokenizer) -> Qwen2_5_VLForConditionalGeneration:
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    head_dim = 8
    special_ids = {"bos_token_id": tokenizer.convert_tokens_to_ids("<|endoftext|>")}
    special_ids["eos_token_id"] = tokenizer.convert_tokens_to_ids("<|im_end|>")
    text_config = {
        "vocab_size": len(tokenizer),
        "hidden_size": TEXT_HIDDEN_SIZE,
        "intermediate_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": TEXT_HIDDEN_SIZE // head_dim,
        "num_key_value_heads": TEXT_HIDDEN_SIZE // head_dim,
        "max_position_embeddings": 1024,
        # Multimodal rotary sections (time, height, width) must add up to half the head size.
        "rope_scaling": {"type": "default", "rope_type": "default", "mrope_section": [1, 1, 2]},
        **special_ids,
    }
    # The vision tower is never run for text-to-image but the class always builds one: keep it minimal.
    vision_config = {"depth": 1, "hidden_size": 16, "intermediate_size": 16, "num_heads": 2}
    vision_config["out_hidden_size"] = TEXT_HIDDEN_SIZE
    # transformers' @strict config takes keyword arguments beyond its fields (set on the config as they are)
    extra: dict[str, Any] = {"vocab_size": len(tokenizer), "hidden_size": TEXT_HIDDEN_SIZE, **special_ids}
    config = Qwen2_5_VLConfig(text_config=text_config, vision_config=vision_config, **extra)
    return Qwen2_5_VLForConditionalGeneration(config)


def _transformer() -> QwenImageTransformer2DModel:
    from diffusers import QwenImageTransformer2DModel

    return QwenImageTransformer2DModel(
        patch_size=2,
        in_channels=LATENT_CHANNELS * 4,  # latents are packed 2x2 into tokens
        out_channels=LATENT_CHANNELS,
        num_layers=2,
        attention_head_dim=8,
        num_attention_heads=4,
        joint_attention_dim=TEXT_HIDDEN_SIZE,
        axes_dims_rope=(2, 2, 4),  # frame, height, width: adds up to attention_head_dim
    )


def _vae() -> AutoencoderKLQwenImage:
    from diffusers import AutoencoderKLQwenImage

    return AutoencoderKLQwenImage(
        base_dim=8,
        z_dim=LATENT_CHANNELS,
        dim_mult=[1, 2],
        num_res_blocks=1,
        temperal_downsample=[False],
        # Normalisation statistics of a random VAE mean nothing: identity, so latents pass unchanged.
        latents_mean=[0.0] * LATENT_CHANNELS,
        latents_std=[1.0] * LATENT_CHANNELS,
    )


def _scheduler() -> FlowMatchEulerDiscreteScheduler:
    from diffusers import FlowMatchEulerDiscreteScheduler

    # Qwen-Image's sampler settings: resolution-dependent exponential shift ending at sigma 0.02.
    return FlowMatchEulerDiscreteScheduler(
        num_train_timesteps=1000,
        shift=1.0,
        use_dynamic_shifting=True,
        base_shift=0.5,
        max_shift=0.9,
        base_image_seq_len=256,
        max_image_seq_len=8192,
        shift_terminal=0.02,
        time_shift_type="exponential",
    )


def build_tiny_flow_pipeline(seed: int = 0) -> QwenImagePipeline:
    """A tiny Qwen-Image pipeline whose random weights depend only on ``seed``."""
    import torch
    from diffusers import QwenImagePipeline

    tokenizer = build_qwen_tokenizer()
    # fork_rng: seeding must not change the random stream of whoever called us.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        transformer, vae, text_encoder = _transformer(), _vae(), _text_encoder(tokenizer)
    return QwenImagePipeline(
        scheduler=_scheduler(),
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        transformer=transformer,
    )


def _marker(seed: int) -> dict[str, Any]:
    return {"format_version": TINY_FLOW_FORMAT_VERSION, "seed": seed}


def is_tiny_flow_pipeline(folder: str | Path, seed: int) -> bool:
    """Whether ``folder`` holds a complete tiny flow pipeline saved by this version with ``seed``."""
    return holds(folder, MARKER_FILE, _marker(seed))


def save_tiny_flow_pipeline(folder: str | Path, seed: int = 0) -> Path:
    """Build the tiny flow pipeline and save it so ``from_pretrained(folder)`` loads it offline."""
    return save_marked(folder, MARKER_FILE, _marker(seed), lambda: build_tiny_flow_pipeline(seed))


def ensure_tiny_flow_pipeline(folder: str | Path, seed: int = 0) -> Path:
    """The tiny flow pipeline in ``folder``, built only when absent, incomplete or saved with another seed."""
    return ensure_marked(folder, MARKER_FILE, _marker(seed), lambda: build_tiny_flow_pipeline(seed))
