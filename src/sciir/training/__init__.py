"""LoRA fine-tuning of diffusers pipelines.

From the bottom up: the run's settings (``config``), training images and their aspect buckets
(``training_images``), the interface a model family implements and the encoded examples (``recipe``), the
adapter file (``lora_adapter``), memory and speed options (``resources``), random states, checkpoints and
data-parallel processes (``random_states``, ``checkpoints``, ``data_parallel``), the encoding cache
(``encoding_cache``); which recipe trains which pipeline (``families``) and one module per model family
(``noise_prediction``, ``flow_matching``, ``flux``, ``sd3``, with ``pooled_captions`` shared by the last
two); the loop (``loop``); the tiny stand-in pipelines of the default run (``tiny_stable_diffusion``,
``tiny_qwen_image``, ``saved_pipelines``). The finetune stage's side on top: its parameters and base model
(``finetune_params``), validation images (``validation_images``), launched processes (``distributed``) and
the run with what it reports (``finetune_run``).
"""
