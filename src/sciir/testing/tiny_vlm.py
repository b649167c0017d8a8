"""A tiny Qwen2.5-VL-style vision-language model with random weights, built locally (nothing from a hub).

It stands in for a real local judge in tests: the same classes (``Qwen2_5_VLForConditionalGeneration``,
``Qwen2Tokenizer``, the Qwen2-VL image processor) saved in the folder layout of a real Qwen2.5-VL
checkpoint, so whatever loads a real one with ``AutoModelForImageTextToText`` and ``AutoProcessor``
loads this one. The tokenizer is byte-level without merges (one token per byte, every text encodable)
plus Qwen's chat and vision special tokens; the chat template is Qwen's, trimmed to text and images.

The image processor is saved on its own rather than as a ``Qwen2_5_VLProcessor``: that processor also
needs a video processor, whose class requires torchvision (see :mod:`sciir.backends.transformers_vlm`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from transformers import Qwen2_5_VLForConditionalGeneration, Qwen2Tokenizer, Qwen2VLImageProcessorPil

PAD_TOKEN = "<|endoftext|>"
END_OF_TURN = "<|im_end|>"
IMAGE_TOKEN = "<|image_pad|>"
VIDEO_TOKEN = "<|video_pad|>"
VISION_START = "<|vision_start|>"
VISION_END = "<|vision_end|>"
SPECIAL_TOKENS = (PAD_TOKEN, "<|im_start|>", END_OF_TURN, VISION_START, VISION_END, IMAGE_TOKEN, VIDEO_TOKEN)

# Qwen's chat template, trimmed to text and image parts (no tools, no video).
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# Weights drawn wider than a real model's (0.02): with a hidden size of 32, narrower random weights give
# the same reply to every input, and tests need replies that depend on the prompt and the image.
INIT_STD = 0.1
# Images are resized to between 56x56 and 112x112 pixels: 4 to 16 image tokens each, so tests stay fast.
MIN_PIXELS = 56 * 56
MAX_PIXELS = 112 * 112


def build_tokenizer() -> Qwen2Tokenizer:
    """A byte-level Qwen2 tokenizer (no merges) with Qwen's special tokens and chat template."""
    from tokenizers import AddedToken
    from tokenizers.pre_tokenizers import ByteLevel
    from transformers import Qwen2Tokenizer

    tokens = sorted(ByteLevel.alphabet()) + list(SPECIAL_TOKENS)
    tokenizer = Qwen2Tokenizer(vocab={token: index for index, token in enumerate(tokens)}, merges=[])
    tokenizer.add_tokens([AddedToken(token, special=True) for token in SPECIAL_TOKENS])
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def build_image_processor() -> Qwen2VLImageProcessorPil:
    """Qwen2-VL's image processor (the Pillow implementation, which needs no torchvision), kept small."""
    from transformers import Qwen2VLImageProcessorPil

    return Qwen2VLImageProcessorPil(min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS)


def build_tiny_model(tokenizer: Qwen2Tokenizer, seed: int = 0) -> Qwen2_5_VLForConditionalGeneration:
    """A Qwen2.5-VL model of about 100k parameters whose random weights depend only on ``seed``."""
    import torch
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    def token_id(token: str) -> int:
        return cast(int, tokenizer.convert_tokens_to_ids(token))  # typed int | list[int]: one token, one id

    text_config = {
        "vocab_size": len(tokenizer),
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        # A judge prompt with its checklist is about 2,000 tokens here (one token a byte).
        "max_position_embeddings": 4096,
        "initializer_range": INIT_STD,
        # Multimodal rotary sections (temporal, height, width) must add up to half the head size (16).
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]},
        "bos_token_id": None,  # Qwen starts no text with a special token
        "eos_token_id": token_id(END_OF_TURN),
        "pad_token_id": token_id(PAD_TOKEN),
    }
    vision_config = {
        "depth": 1,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_heads": 2,
        "out_hidden_size": 32,
        "window_size": 56,
        "fullatt_block_indexes": [0],
        "initializer_range": INIT_STD,
    }
    config = Qwen2_5_VLConfig(
        text_config=text_config,
        vision_config=vision_config,
        image_token_id=token_id(IMAGE_TOKEN),
        video_token_id=token_id(VIDEO_TOKEN),
        vision_start_token_id=token_id(VISION_START),
        vision_end_token_id=token_id(VISION_END),
    )
    # fork_rng: seeding must not change the random stream of whoever called us.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2_5_VLForConditionalGeneration(config)
    model.generation_config.eos_token_id = token_id(END_OF_TURN)
    model.generation_config.pad_token_id = token_id(PAD_TOKEN)
    return model.eval()


def save_tiny_vlm(folder: str | Path, seed: int = 0) -> Path:
    """Build the tiny model, tokenizer and image processor and save them (safetensors) in ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer()
    build_tiny_model(tokenizer, seed).save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    build_image_processor().save_pretrained(folder)
    return folder
