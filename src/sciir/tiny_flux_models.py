"""A tiny Flux pipeline with random weights, built locally (nothing from a hub), for tests of Flux training.

The classes of diffusers' ``FluxPipeline`` (``FluxTransformer2DModel`` with guidance embedding, as
FLUX.1-dev, ``AutoencoderKL``, a CLIP and a T5 text encoder with their tokenizers,
``FlowMatchEulerDiscreteScheduler`` with Flux-dev's dynamic shift) at a few hundred kilobytes, saved in the
same folder layout. The CLIP side is :mod:`sciir.tiny_models`'; the T5 tokenizer is a unigram over
single characters, so every text is encodable.
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import TYPE_CHECKING

from sciir.saved_pipelines import ensure_marked
from sciir.tiny_models import (
    LATENT_CHANNELS,
    TEXT_HIDDEN_SIZE,
    build_tokenizer,
    clip_text_encoder,
    seeded,
    tiny_vae,
)

if TYPE_CHECKING:
    from diffusers import FluxPipeline, FluxTransformer2DModel
    from transformers import T5EncoderModel, T5Tokenizer

MARKER_FILE = "sciir_tiny_flux.json"
TINY_FLUX_FORMAT_VERSION = 1
T5_HIDDEN_SIZE = 16
T5_SPECIALS = ("<pad>", "</s>", "<unk>")


def build_t5_tokenizer() -> T5Tokenizer:
    """A T5 tokenizer whose pieces are the printable characters (and the word-start marker)."""
    from transformers import T5Tokenizer

    pieces = [(token, 0.0) for token in T5_SPECIALS]
    pieces += [(character, -1.0) for character in ["\u2581", *string.printable.strip()]]
    return T5Tokenizer(vocab=pieces, extra_ids=0)


def _t5_encoder(tokenizer: T5Tokenizer) -> T5EncoderModel:
    from transformers import T5Config, T5EncoderModel

    config = T5Config(
        vocab_size=len(tokenizer),
        d_model=T5_HIDDEN_SIZE,
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

    tokenizer, tokenizer_2 = build_tokenizer(), build_t5_tokenizer()
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
