"""LoRA fine-tuning of diffusers pipelines: the shared loop, one module per model family, checkpoints,
the encoding cache, data-parallel processes, and the tiny stand-in pipelines of the default run."""
