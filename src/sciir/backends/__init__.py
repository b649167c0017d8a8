"""The model seam: interfaces, a lazy registry of backends, and the response cache.

Importing this package imports no model library; a backend's module is imported only
when that backend is built.
"""

from sciir.backends.base import (
    GenerationRequest,
    GenerationResult,
    ImageGenerator,
    VisionLanguageModel,
    VLMRequest,
    VLMResult,
)
from sciir.backends.registry import build_backend, registered_backends

__all__ = [
    "GenerationRequest",
    "GenerationResult",
    "ImageGenerator",
    "VLMRequest",
    "VLMResult",
    "VisionLanguageModel",
    "build_backend",
    "registered_backends",
]
