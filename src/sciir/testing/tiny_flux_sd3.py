"""Tiny Flux and Stable Diffusion 3 pipelines with random weights, built locally (nothing from a hub), for
tests of their training.

The classes of diffusers' ``FluxPipeline`` (``FluxTransformer2DModel`` with guidance embedding, as
FLUX.1-dev, ``AutoencoderKL``, a CLIP and a T5 text encoder with their tokenizers,
``FlowMatchEulerDiscreteScheduler`` with Flux-dev's dynamic shift) and of ``StableDiffusion3Pipeline``
(``SD3Transformer2DModel``, two projecting CLIP encoders and a T5 encoder, SD3's shift of 3) at a few
hundred kilobytes, saved in the same folder layouts. The CLIP side is :mod:`sciir.training.tiny_stable_diffusion`'; the T5
tokenizer is a unigram over single characters, so every text is encodable.
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import TYPE_CHECKING

from sciir.training.saved_pipelines import ensure_marked
from sciir.training.tiny_stable_diffusion import (
    LATENT_CHANNELS,
    TEXT_HIDDEN_SIZE,
    build_clip_tokenizer,
    clip_text_encoder,
    projecting_clip_text_encoder,
    seeded,
    tiny_vae,
)

if TYPE_CHECKING:
    from diffusers import (
        FluxPipeline,
        FluxTransformer2DModel,
        SD3Transformer2DModel,
        StableDiffusion3Pipeline,
    )
    from transformers import T5EncoderModel, T5Tokenizer

MARKER_FILE = "sciir_tiny_flux.json"
SD3_MARKER_FILE = "sciir_tiny_sd3.json"
TINY_FLUX_FORMAT_VERSION = 1
T5_HIDDEN_SIZE = 16
# SD3 pads the two CLIP encoders' states, side by side, to the T5 width: it must hold both.
SD3_T5_HIDDEN_SIZE = 2 * TEXT_HIDDEN_SIZE
T5_SPECIALS = ("<pad>", "</s>", "<unk>")


def build_t5_tokenizer() -> T5Tokenizer:
    """A T5 tokenizer whose pieces are the printable characters (and the word-start marker)."""
    from transformers import T5Tokenizer

    pieces = [(token, 0.0) for token in T5_SPECIALS]
    pieces += [(character, -1.0) for character in ["\u2581", *string.printable.strip()]]
    return T5Tokenizer(vocab=pieces, extra_ids=0)


def _t5_encoder(tokenizer: T5Tokenizer, width: int = T5_HIDDEN_SIZE) -> T5EncoderModel:
    from transformers import T5Config, T5EncoderModel

    config = T5Config(
        vocab_size=len(tokenizer),
        d_model=width,
        d_kv=8,
        d_ff=32,
        num_layers=1,
        num_heads=2,
        relative_attention_num_buckets=8,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return T5EncoderModel(config)


def _transformer() -> FluxTransformer2DModel:
    from diffusers import FluxTransformer2DModel

    return FluxTransformer2DModel(
        patch_size=1,
        in_channels=LATENT_CHANNELS * 4,  # latents are packed 2x2 into tokens
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=8,
        num_attention_heads=2,
        joint_attention_dim=T5_HIDDEN_SIZE,
        pooled_projection_dim=TEXT_HIDDEN_SIZE,
        guidance_embeds=True,
        axes_dims_rope=(2, 2, 4),  # text position, height, width: adds up to attention_head_dim
    )


def build_tiny_flux_pipeline(seed: int = 0) -> FluxPipeline:
    """A tiny Flux pipeline whose random weights depend only on ``seed``."""
    from diffusers import FlowMatchEulerDiscreteScheduler, FluxPipeline

    tokenizer, tokenizer_2 = build_clip_tokenizer(), build_t5_tokenizer()
    transformer, vae, text_encoder, text_encoder_2 = seeded(
        seed,
        # Flux's VAE shifts its latents before scaling them; the tiny one's shift is 0.
        lambda: (
            _transformer(),
            tiny_vae(shift_factor=0.0),
            clip_text_encoder(tokenizer),
            _t5_encoder(tokenizer_2),
        ),
    )
    # FLUX.1-dev's scheduler: resolution-dependent shift.
    scheduler = FlowMatchEulerDiscreteScheduler(
        shift=3.0, use_dynamic_shifting=True, base_shift=0.5, max_shift=1.15,
        base_image_seq_len=256, max_image_seq_len=4096,
    )  # fmt: skip
    return FluxPipeline(
        scheduler=scheduler,
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        text_encoder_2=text_encoder_2,
        tokenizer_2=tokenizer_2,
        transformer=transformer,
    )


def ensure_tiny_flux_pipeline(folder: str | Path, seed: int = 0) -> Path:
    """The tiny Flux pipeline in ``folder``, built only when absent, incomplete or saved with another seed."""
    marker = {"format_version": TINY_FLUX_FORMAT_VERSION, "seed": seed}
    return ensure_marked(folder, MARKER_FILE, marker, lambda: build_tiny_flux_pipeline(seed))


def _sd3_transformer() -> SD3Transformer2DModel:
    from diffusers import SD3Transformer2DModel

    return SD3Transformer2DModel(
        sample_size=32,
        patch_size=2,
        in_channels=LATENT_CHANNELS,
        out_channels=LATENT_CHANNELS,
        num_layers=1,
        attention_head_dim=8,
        num_attention_heads=2,
        joint_attention_dim=SD3_T5_HIDDEN_SIZE,
        caption_projection_dim=16,
        pooled_projection_dim=2 * TEXT_HIDDEN_SIZE,  # both CLIP encoders' projections side by side
        pos_embed_max_size=32,
    )


def build_tiny_sd3_pipeline(seed: int = 0) -> StableDiffusion3Pipeline:
    """A tiny Stable Diffusion 3 pipeline whose random weights depend only on ``seed``."""
    from diffusers import FlowMatchEulerDiscreteScheduler, StableDiffusion3Pipeline

    tokenizers = (build_clip_tokenizer(), build_clip_tokenizer(), build_t5_tokenizer())
    transformer, vae, clip_l, clip_g, t5 = seeded(
        seed,
        lambda: (
            _sd3_transformer(),
            tiny_vae(shift_factor=0.0),
            projecting_clip_text_encoder(tokenizers[0]),
            projecting_clip_text_encoder(tokenizers[1]),
            _t5_encoder(tokenizers[2], SD3_T5_HIDDEN_SIZE),
        ),
    )
    return StableDiffusion3Pipeline(
        transformer=transformer,
        scheduler=FlowMatchEulerDiscreteScheduler(shift=3.0),
        vae=vae,
        text_encoder=clip_l,
        tokenizer=tokenizers[0],
        text_encoder_2=clip_g,
        tokenizer_2=tokenizers[1],
        text_encoder_3=t5,
        tokenizer_3=tokenizers[2],
    )


def ensure_tiny_sd3_pipeline(folder: str | Path, seed: int = 0) -> Path:
    """The tiny SD3 pipeline in ``folder``, built only when absent, incomplete or saved with another seed."""
    marker = {"format_version": TINY_FLUX_FORMAT_VERSION, "seed": seed}
    return ensure_marked(folder, SD3_MARKER_FILE, marker, lambda: build_tiny_sd3_pipeline(seed))
