"""A tiny Stable-Diffusion-style pipeline with random weights, built locally (nothing from a hub).

It stands in for a real base model in tests and in the offline embedded run: the same classes
(UNet2DConditionModel, AutoencoderKL, CLIPTextModel, CLIPTokenizer, DDIM scheduler) saved in
the same folder layout, so whatever loads a real diffusers pipeline loads this one. The
tokenizer is a byte-level CLIP tokenizer without merges (one token per byte), built in code.
A tiny SDXL pipeline (a second, projecting CLIP text encoder and a UNet conditioned on the pooled
caption and the size ids) is built the same way, for tests of SDXL-class training.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from sciir.training.saved_pipelines import ensure_marked, holds, save_marked

if TYPE_CHECKING:
    # From their modules: `from diffusers import ...` gives a type checker diffusers' dummy objects.
    from diffusers.models.autoencoders.autoencoder_kl import AutoencoderKL
    from diffusers.models.unets.unet_2d_condition import UNet2DConditionModel
    from diffusers.pipelines.stable_diffusion.pipeline_stable_diffusion import StableDiffusionPipeline
    from diffusers.pipelines.stable_diffusion_xl.pipeline_stable_diffusion_xl import StableDiffusionXLPipeline
    from diffusers.schedulers.scheduling_ddim import DDIMScheduler
    from transformers import CLIPTextModel, CLIPTextModelWithProjection, CLIPTokenizer

T = TypeVar("T")
MARKER_FILE = "sciir_tiny.json"
SDXL_MARKER_FILE = "sciir_tiny_sdxl.json"
# Bump when a configuration below changes, so copies saved by an older version are rebuilt.
TINY_FORMAT_VERSION = 2
MAX_TOKENS = 77
LATENT_SIZE = 32  # the VAE halves each side, so the pipeline's native size is 64 px
LATENT_CHANNELS = 4
# The random encoder's latent means have a standard deviation of about 0.25 on figures and on noise;
# scaled by 4 they are about unit-variance, as Stable Diffusion's 0.18215 makes its latents.
LATENT_SCALING = 4.0
# A trained VAE's posterior is narrow; a random one's is as wide as the prior (std 1 against means of
# std 0.25), so every sampled latent would be mostly noise and nothing could be learnt from the images.
# A fixed log-variance of -12 (std 0.0025) makes it narrow.
POSTERIOR_LOG_VARIANCE = -12.0
BOS_TOKEN = "<|startoftext|>"
EOS_TOKEN = "<|endoftext|>"


def clip_tokenizer_vocab() -> dict[str, int]:
    """Byte-level CLIP vocabulary: each byte symbol alone and word-final (``</w>``), then the two specials."""
    from tokenizers.pre_tokenizers import ByteLevel

    symbols = sorted(ByteLevel.alphabet())
    tokens = symbols + [f"{symbol}</w>" for symbol in symbols] + [BOS_TOKEN, EOS_TOKEN]
    return {token: index for index, token in enumerate(tokens)}


def build_clip_tokenizer() -> CLIPTokenizer:
    """A CLIP tokenizer over :func:`clip_tokenizer_vocab` with no merges (every text is encodable)."""
    from transformers import CLIPTokenizer

    return CLIPTokenizer(vocab=clip_tokenizer_vocab(), merges=[], model_max_length=MAX_TOKENS)


TEXT_HIDDEN_SIZE = 32
# SDXL's UNet embeds each of its six size ids (original size, crop corner, target size) in this many
# dimensions, beside the pooled caption.
SDXL_TIME_EMBED_DIM = 8


def _text_config(tokenizer: CLIPTokenizer, **extra: Any) -> Any:
    from transformers import CLIPTextConfig

    return CLIPTextConfig(
        vocab_size=len(tokenizer),
        hidden_size=TEXT_HIDDEN_SIZE,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=MAX_TOKENS,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **extra,
    )


def clip_text_encoder(tokenizer: CLIPTokenizer) -> CLIPTextModel:
    from transformers import CLIPTextModel

    return CLIPTextModel(_text_config(tokenizer))


def projecting_clip_text_encoder(tokenizer: CLIPTokenizer) -> CLIPTextModelWithProjection:
    from transformers import CLIPTextModelWithProjection

    return CLIPTextModelWithProjection(_text_config(tokenizer, projection_dim=TEXT_HIDDEN_SIZE))


def _unet(**conditioning: Any) -> UNet2DConditionModel:
    """The tiny UNet, cross-attending to one text encoder's states unless ``conditioning`` says otherwise."""
    from diffusers import UNet2DConditionModel

    return UNet2DConditionModel(
        **{
            "sample_size": LATENT_SIZE,
            "in_channels": 4,
            "out_channels": 4,
            "block_out_channels": (16, 32),
            "layers_per_block": 1,
            "down_block_types": ("DownBlock2D", "CrossAttnDownBlock2D"),
            "up_block_types": ("CrossAttnUpBlock2D", "UpBlock2D"),
            "cross_attention_dim": TEXT_HIDDEN_SIZE,
            "attention_head_dim": 8,
            "norm_num_groups": 8,
        }
        | conditioning
    )


def _sdxl_unet() -> UNet2DConditionModel:
    """The tiny UNet as SDXL's: the two encoders' states side by side, the pooled caption and size ids."""
    return _unet(
        cross_attention_dim=2 * TEXT_HIDDEN_SIZE,
        use_linear_projection=True,
        addition_embed_type="text_time",
        addition_time_embed_dim=SDXL_TIME_EMBED_DIM,
        projection_class_embeddings_input_dim=6 * SDXL_TIME_EMBED_DIM + TEXT_HIDDEN_SIZE,
    )


def tiny_vae(**extra: Any) -> AutoencoderKL:
    """The tiny VAE (one halving per side, a narrow posterior); ``extra`` adds to its configuration."""
    from diffusers import AutoencoderKL

    vae = AutoencoderKL(
        in_channels=3,
        out_channels=3,
        block_out_channels=(16, 32),
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
        latent_channels=LATENT_CHANNELS,
        layers_per_block=1,
        norm_num_groups=8,
        sample_size=LATENT_SIZE * 2,
        scaling_factor=LATENT_SCALING,
        **extra,
    )
    narrow_posterior(vae, POSTERIOR_LOG_VARIANCE)
    return vae


def narrow_posterior(vae: AutoencoderKL, log_variance: float) -> None:
    """Make the encoder's posterior log-variance the constant ``log_variance`` whatever the image.

    The moments' second half (after ``quant_conv``) is the log-variance: zero weights and a constant
    bias fix it, leaving the means as they were.
    """
    import torch

    channels = vae.config["latent_channels"]
    quant_conv = cast(torch.nn.Conv2d, vae.quant_conv)  # a VAE built with use_quant_conv (the default)
    with torch.no_grad():
        quant_conv.weight[channels:] = 0.0
        cast(torch.Tensor, quant_conv.bias)[channels:] = log_variance  # a Conv2d with its bias


def _scheduler() -> DDIMScheduler:
    from diffusers import DDIMScheduler

    # Stable Diffusion's noise schedule, so training and inference behave like the real model's.
    return DDIMScheduler(
        beta_start=0.00085,
        beta_end=0.012,
        beta_schedule="scaled_linear",
        clip_sample=False,
        set_alpha_to_one=False,
        steps_offset=1,
    )


def seeded(seed: int, make: Callable[[], T]) -> T:
    """``make()`` with torch seeded by ``seed``, the caller's random stream left as it was."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return make()


def build_tiny_pipeline(seed: int = 0) -> StableDiffusionPipeline:
    """A tiny text-to-image pipeline whose random weights depend only on ``seed``."""
    from diffusers import StableDiffusionPipeline

    tokenizer = build_clip_tokenizer()
    unet, vae, text_encoder = seeded(seed, lambda: (_unet(), tiny_vae(), clip_text_encoder(tokenizer)))
    return StableDiffusionPipeline(
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        unet=unet,
        scheduler=_scheduler(),
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )


def build_tiny_sdxl_pipeline(seed: int = 0) -> StableDiffusionXLPipeline:
    """A tiny SDXL pipeline whose random weights depend only on ``seed`` (the VAE, tokenizer and scheduler
    of the tiny pipeline, a second, projecting text encoder and an SDXL UNet)."""
    from diffusers import StableDiffusionXLPipeline

    tokenizer = build_clip_tokenizer()
    unet, vae, text_encoder, text_encoder_2 = seeded(
        seed,
        lambda: (
            _sdxl_unet(),
            tiny_vae(),
            clip_text_encoder(tokenizer),
            projecting_clip_text_encoder(tokenizer),
        ),
    )
    return StableDiffusionXLPipeline(
        vae=vae,
        text_encoder=text_encoder,
        text_encoder_2=text_encoder_2,
        tokenizer=tokenizer,
        tokenizer_2=build_clip_tokenizer(),
        unet=unet,
        scheduler=_scheduler(),
        add_watermarker=False,
    )


def ensure_tiny_sdxl_pipeline(folder: str | Path, seed: int = 0) -> Path:
    """The tiny SDXL pipeline in ``folder``, built only when absent, incomplete or saved with another seed."""
    return ensure_marked(folder, SDXL_MARKER_FILE, _marker(seed), lambda: build_tiny_sdxl_pipeline(seed))


def _marker(seed: int) -> dict[str, Any]:
    return {"format_version": TINY_FORMAT_VERSION, "seed": seed}


def is_tiny_pipeline(folder: str | Path, seed: int) -> bool:
    """Whether ``folder`` holds a complete tiny pipeline saved by this version with ``seed``."""
    return holds(folder, MARKER_FILE, _marker(seed))


def save_tiny_pipeline(folder: str | Path, seed: int = 0) -> Path:
    """Build the tiny pipeline and save it so ``from_pretrained(folder)`` loads it offline."""
    return save_marked(folder, MARKER_FILE, _marker(seed), lambda: build_tiny_pipeline(seed))


def ensure_tiny_pipeline(folder: str | Path, seed: int = 0) -> Path:
    """The tiny pipeline in ``folder``, built only when absent, incomplete or saved with another seed."""
    return ensure_marked(folder, MARKER_FILE, _marker(seed), lambda: build_tiny_pipeline(seed))
