import subprocess
import sys

import pytest

from sciir.backends.base import GenerationRequest
from sciir.backends.registry import (
    UnknownBackendError,
    build_backend,
    register_backend,
    registered_backends,
    resolve_backend,
)


def test_unknown_name_suggests_close_matches():
    with pytest.raises(UnknownBackendError, match="did you mean openai"):
        resolve_backend("vlm", "opena")


def test_registry_lists_the_documented_backends():
    assert {"offline", "ocr", "openai"} <= set(registered_backends("vlm"))
    assert {"programmatic", "diffusers"} <= set(registered_backends("generator"))


def test_registered_class_must_implement_the_kind_interface():
    register_backend("vlm", "wrong_kind", "sciir.testing.scripted:SeedBytesGenerator")
    with pytest.raises(TypeError, match="is not a VisionLanguageModel"):
        resolve_backend("vlm", "wrong_kind")


def test_build_passes_config_and_returns_a_working_backend():
    register_backend("generator", "echo", "sciir.testing.scripted:SeedBytesGenerator")
    backend = build_backend("generator", "echo", colour="blue")
    assert backend.config == {"colour": "blue"}
    [result] = backend.generate([GenerationRequest(sample_id="s1", prompt="hi")])
    assert result.ok and result.image == b"\x00\x00\x00"


def test_importing_the_seam_and_building_light_backends_imports_no_model_library():
    code = (
        "import sys; import sciir.backends.registry as b; "
        "b.build_backend('generator', 'programmatic'); b.resolve_backend('generator', 'diffusers'); "
        "heavy = sorted(m for m in ('torch', 'diffusers', 'transformers', 'peft') if m in sys.modules); "
        "print(','.join(heavy))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""
