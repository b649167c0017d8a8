"""Qwen-Image at GPU scale (issue 12, "Measured"): LoRA training seconds per step at 1024x1024, batch 1,
and generation seconds per image at 1024x1024 and 50 steps, each with its model FLOPs utilisation (MFU).

Weights cannot be downloaded, so the models are Qwen-Image's architectures at full size (the default
configurations of diffusers' QwenImageTransformer2DModel, 20 B parameters, and AutoencoderKLQwenImage)
with random weights, in bfloat16: a step does the arithmetic the trained model does. The text encoder
(Qwen2.5-VL-7B) runs once per prompt, not per step, and is left out: random caption embeddings of
``--text-tokens`` tokens stand in for its output.

Training runs the project's recipe (sciir.training.flow_matching: the LoRA on the attention projections of both
streams, the batch's draws and the flow-matching loss; sciir.training.resources: bf16 autocast, gradient
checkpointing, AdamW) on the transformer. Generation runs QwenImagePipeline with true classifier-free
guidance (two transformer passes per step, as the pipeline does) and the VAE decode.

FLOPs are counted, not estimated: torch.utils.flop_counter.FlopCounterMode over one training step without
gradient checkpointing (model FLOPs: a recomputation is not counted), and over generations of 2 and 3
steps (per step: their difference; the rest is the decode and set-up; Qwen-Image's terminal shift
makes a single step's sigmas undefined). MFU = FLOPs / seconds / peak, the
peak being the device's dense bf16 rate (--peak-tflops; known for H100 and H200: 989 TFLOP/s).

    python benchmarks/bench_gpu_qwen_image.py             # on a CUDA GPU, full size
    python benchmarks/bench_gpu_qwen_image.py --tiny      # the same code path on the CPU, tiny models
    python benchmarks/bench_gpu_qwen_image.py --quick     # --tiny with the fewest steps and images

``--quick`` (every benchmark has it) is ``--tiny`` with the fewest steps and images unless given: 1 timed
training step and 1 timed generation of 2 denoising steps (the fewest Qwen-Image's scheduler draws), after the
same warm-ups and FLOP counts.

On a machine without the project installed, run it from the repository root with ``PYTHONPATH=src``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from sciir.training.config import LoraTrainConfig
from sciir.training.flow_matching import (
    EncodedFlowExamples,
    add_flow_lora,
    flow_matching_draws,
    flow_matching_loss,
)
from sciir.training.resources import autocast, build_optimizer, enable_gradient_checkpointing

# Dense bfloat16 tensor-core peaks (NVIDIA's data sheets, without sparsity), by a name in the device's.
PEAK_TFLOPS = {"H200": 989.4, "H100": 989.4, "A100": 312.0}
# The targets.
TRAINING_MFU_TARGET, GENERATION_MFU_TARGET = 0.35, 0.45
# Timed training steps, denoising steps per image and timed images: (full run and --tiny, --quick).
SIZES = {"train_steps": (5, 1), "generation_steps": (50, 2), "images": (2, 1)}


@dataclass(frozen=True)
class Setup:
    """What one run of the benchmark measures on."""

    device: str
    dtype: torch.dtype
    resolution: int
    text_tokens: int
    text_dim: int
    latent_channels: int
    vae_factor: int


@dataclass(frozen=True)
class Measured:
    """One measurement: seconds per unit (a step, an image), counted FLOPs per unit, and MFU."""

    what: str
    seconds: float
    tflop: float
    mfu: float | None
    peak_memory_gib: float | None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--tiny", action="store_true", help="tiny random models on the CPU (a check of the code)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="--tiny with 1 timed training step and 1 timed image of 2 steps"
    )
    parser.add_argument("--resolution", type=int, default=None, help="image side (default 1024; tiny: 32)")
    parser.add_argument(
        "--text-tokens", type=int, default=256, help="caption tokens the transformer attends to"
    )
    parser.add_argument(
        "--train-steps",
        type=int,
        default=None,
        help="timed training steps (after 2 warm-up; default 5, quick: 1)",
    )
    parser.add_argument(
        "--generation-steps", type=int, default=None, help="denoising steps per image (default 50, quick: 2)"
    )
    parser.add_argument(
        "--images", type=int, default=None, help="timed generations (after 1 warm-up; default 2, quick: 1)"
    )
    parser.add_argument("--lora-rank", type=int, default=64)
    parser.add_argument("--gradient-checkpointing", action="store_true")
    parser.add_argument("--peak-tflops", type=float, default=None, help="the device's dense bf16 peak")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args(argv)
    args.tiny = args.tiny or args.quick
    for name, (full, quick) in SIZES.items():  # the quick run checks the code path: the fewest of each
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    return args


def build_models(tiny: bool) -> tuple[torch.nn.Module, torch.nn.Module, Any]:
    """The transformer, the VAE and the scheduler: Qwen-Image's at full size, or the project's tiny ones."""
    from diffusers import AutoencoderKLQwenImage, FlowMatchEulerDiscreteScheduler, QwenImageTransformer2DModel

    if tiny:
        from sciir.training.tiny_qwen_image import build_tiny_flow_pipeline

        pipe = build_tiny_flow_pipeline(seed=0)
        return pipe.transformer, pipe.vae, pipe.scheduler
    torch.manual_seed(0)
    transformer = QwenImageTransformer2DModel()
    vae = AutoencoderKLQwenImage()
    # Qwen-Image's scheduler configuration (the released scheduler_config.json).
    scheduler = FlowMatchEulerDiscreteScheduler(
        num_train_timesteps=1000, shift=1.0, use_dynamic_shifting=True, base_shift=0.5, max_shift=0.9,
        base_image_seq_len=256, max_image_seq_len=8192, shift_terminal=0.02, time_shift_type="exponential",
    )  # fmt: skip
    return transformer, vae, scheduler


def synchronise(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def peak_memory_gib(device: str) -> float | None:
    return torch.cuda.max_memory_allocated() / 2**30 if device.startswith("cuda") else None


def counted_tflop(run: Callable[[], Any]) -> float:
    """The FLOPs ``run`` executes, in TFLOP, as torch's FLOP counter sees them."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        run()
    return counter.get_total_flops() / 1e12


def mfu(tflop: float, seconds: float, peak_tflops: float | None) -> float | None:
    return None if peak_tflops is None else tflop / seconds / peak_tflops


def random_examples(setup: Setup, generator: torch.Generator) -> EncodedFlowExamples:
    """One training example: a 1024 px image's latents and a caption's embeddings, random."""
    side = setup.resolution // setup.vae_factor
    latents = torch.randn(1, setup.latent_channels, side, side, generator=generator)
    embeds = torch.randn(1, setup.text_tokens, setup.text_dim, generator=generator)
    return EncodedFlowExamples(
        latents=latents.to(setup.device, setup.dtype),
        caption_embeds=embeds.to(setup.device, setup.dtype),
        caption_mask=None,
    )


def measure_training(
    transformer: torch.nn.Module, scheduler: Any, setup: Setup, args: argparse.Namespace
) -> Measured:
    """Seconds per LoRA step (batch 1) after two warm-up steps, and the counted FLOPs of one step."""
    from diffusers import FlowMatchEulerDiscreteScheduler
    from diffusers.training_utils import cast_training_params

    config = LoraTrainConfig(
        family="flow_matching", resolution=setup.resolution, steps=args.train_steps, batch_size=1,
        learning_rate=1e-4, lora_rank=args.lora_rank, seed=0, mixed_precision="bf16",
        gradient_checkpointing=args.gradient_checkpointing, device=setup.device,
    )  # fmt: skip
    add_flow_lora(transformer, config)
    cast_training_params(transformer, dtype=torch.float32)  # the LoRA trains in float32, the base is bf16
    trainable = [p for p in transformer.parameters() if p.requires_grad]
    optimizer = build_optimizer(config.optimizer, trainable, config.learning_rate)
    training_sigmas = FlowMatchEulerDiscreteScheduler.from_config(scheduler.config).sigmas
    generator = torch.Generator().manual_seed(0)
    examples = random_examples(setup, generator)
    indices = torch.tensor([0])
    transformer.train()

    def step() -> None:
        draws = flow_matching_draws(examples, indices, config, generator)
        with autocast(config.mixed_precision, transformer.device):
            loss = flow_matching_loss(transformer, examples, indices, training_sigmas, config, draws)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    tflop = counted_tflop(step)  # before checkpointing: model FLOPs, without recomputation
    if config.gradient_checkpointing:
        enable_gradient_checkpointing(transformer)
    for _ in range(2):
        step()
    synchronise(setup.device)
    if setup.device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    for _ in range(args.train_steps):
        step()
    synchronise(setup.device)
    seconds = (time.perf_counter() - started) / args.train_steps
    transformer.eval()
    what = f"LoRA training step (rank {args.lora_rank}, batch 1{', checkpointing' if config.gradient_checkpointing else ''})"
    return Measured(
        what, seconds, tflop, mfu(tflop, seconds, args.peak_tflops), peak_memory_gib(setup.device)
    )


def measure_generation(
    transformer: torch.nn.Module, vae: torch.nn.Module, scheduler: Any, setup: Setup, args: argparse.Namespace
) -> Measured:
    """Seconds per image at ``--generation-steps`` steps with true CFG, and its counted FLOPs."""
    from diffusers import QwenImagePipeline

    pipe = QwenImagePipeline(
        scheduler=scheduler, vae=vae, text_encoder=None, tokenizer=None, transformer=transformer
    )
    pipe.set_progress_bar_config(disable=True)
    generator = torch.Generator().manual_seed(1)
    positive, negative = (random_examples(setup, generator).caption_embeds for _ in range(2))
    mask = torch.ones(positive.shape[:2], dtype=torch.long, device=setup.device)

    def draw(steps: int) -> Any:
        with torch.no_grad():
            return pipe(
                prompt_embeds=positive, prompt_embeds_mask=mask, negative_prompt_embeds=negative,
                negative_prompt_embeds_mask=mask, true_cfg_scale=4.0, height=setup.resolution,
                width=setup.resolution, num_inference_steps=steps, output_type="pil",
                generator=torch.Generator().manual_seed(0),
            ).images[0]  # fmt: skip

    two, three = counted_tflop(lambda: draw(2)), counted_tflop(lambda: draw(3))
    tflop = two + (args.generation_steps - 2) * (three - two)
    draw(args.generation_steps)  # warm-up
    synchronise(setup.device)
    if setup.device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    for _ in range(args.images):
        image = draw(args.generation_steps)
    synchronise(setup.device)
    seconds = (time.perf_counter() - started) / args.images
    assert image.size == (setup.resolution, setup.resolution), image.size
    what = f"generation ({args.generation_steps} steps, true CFG, VAE decode)"
    return Measured(
        what, seconds, tflop, mfu(tflop, seconds, args.peak_tflops), peak_memory_gib(setup.device)
    )


def device_peak(device: str, given: float | None) -> float | None:
    """The dense bf16 peak in TFLOP/s: the one given, else the device's known one (None on a CPU)."""
    if given is not None or not device.startswith("cuda"):
        return given
    name = torch.cuda.get_device_name()
    return next((peak for key, peak in PEAK_TFLOPS.items() if key in name), None)


def table(results: list[Measured], targets: list[float]) -> str:
    lines = [
        "| measured | seconds | TFLOP (counted) | MFU | target | peak memory |",
        "|---|---|---|---|---|---|",
    ]
    for result, target in zip(results, targets, strict=True):
        share = "n/a" if result.mfu is None else f"{result.mfu:.1%}"
        memory = "n/a" if result.peak_memory_gib is None else f"{result.peak_memory_gib:.1f} GiB"
        lines.append(
            f"| {result.what} | {result.seconds:.3f} | {result.tflop:.4g} | {share} | {target:.0%} | {memory} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    device = "cpu" if args.tiny else "cuda"
    if not args.tiny and not torch.cuda.is_available():
        print("No CUDA device: this benchmark measures a GPU (use --tiny to check its code on the CPU).")
        return 2
    args.peak_tflops = device_peak(device, args.peak_tflops)
    transformer, vae, scheduler = build_models(args.tiny)
    dtype = torch.float32 if args.tiny else torch.bfloat16
    transformer.to(device, dtype)
    vae.to(device, dtype)
    setup = Setup(
        device=device,
        dtype=dtype,
        resolution=args.resolution or (32 if args.tiny else 1024),
        text_tokens=args.text_tokens if not args.tiny else 8,
        text_dim=transformer.config.joint_attention_dim,
        latent_channels=transformer.config.out_channels,
        vae_factor=2 ** len(vae.temperal_downsample),
    )
    parameters = sum(p.numel() for p in transformer.parameters())
    name = torch.cuda.get_device_name() if device == "cuda" else "CPU"
    print(f"{name}; transformer {parameters / 1e6:,.1f} M parameters; {setup.resolution}x{setup.resolution}, "
          f"{setup.text_tokens} caption tokens; peak {args.peak_tflops or 'unknown'} TFLOP/s")  # fmt: skip
    generation = measure_generation(transformer, vae, scheduler, setup, args)
    training = measure_training(transformer, scheduler, setup, args)
    results = [training, generation]
    print(table(results, [TRAINING_MFU_TARGET, GENERATION_MFU_TARGET]))
    if args.json:
        report = {"device": name, "parameters": parameters, "resolution": setup.resolution,
                  "text_tokens": setup.text_tokens, "peak_tflops": args.peak_tflops,
                  "results": [asdict(result) for result in results]}  # fmt: skip
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
