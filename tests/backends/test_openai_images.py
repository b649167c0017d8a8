"""The ``openai_images`` generator against a real loopback images server: payloads, sizes, retries,
Retry-After, and every kind of bad answer recorded as an explicit failure."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys

import pytest
from PIL import Image, ImageCms

from sciir.backends.base import GenerationRequest
from sciir.backends.openai_images import OpenAIImagesGenerator, fitted_png, image_usage
from sciir.backends.registry import build_backend
from sciir.testing.fake_images_server import IMAGE_TOKENS, FakeImagesServer

CANARY_KEY = "sk-canary-5b1f0e"


def _generator(server: FakeImagesServer, **settings) -> OpenAIImagesGenerator:
    defaults = {"model": "fake-image-model", "api_key": CANARY_KEY, "retry_base_delay_s": 0.01}
    return OpenAIImagesGenerator(base_url=server.base_url, **{**defaults, **settings})


def _request(sample_id: str = "s1", width: int = 64, height: int = 48, seed: int = 7) -> GenerationRequest:
    return GenerationRequest(
        sample_id=sample_id, prompt=f"a labelled diagram {sample_id}", seed=seed, width=width, height=height
    )


def _size(png: bytes | None) -> tuple[int, int]:
    assert png is not None
    with Image.open(io.BytesIO(png)) as image:
        assert image.format == "PNG"
        return image.size


def _png(width: int, height: int, colour: str = "white") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGBA", (width, height), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def test_registered_under_its_name_and_importing_it_imports_no_model_library():
    backend = build_backend("generator", "openai_images", base_url="http://127.0.0.1:9/v1", model="m")
    assert isinstance(backend, OpenAIImagesGenerator)
    code = (
        "import sys, sciir.backends.openai_images; "
        "print(','.join(m for m in ('torch', 'transformers', 'diffusers') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


def test_sends_the_images_api_payload_and_returns_pngs_of_the_requested_size():
    with FakeImagesServer() as server:
        wide, square = _generator(server).generate([_request("a", 64, 48), _request("b", 32, 32)])
        received = sorted(server.requests, key=lambda r: r.body["prompt"])
    assert wide.ok and square.ok
    assert (_size(wide.image), _size(square.image)) == ((64, 48), (32, 32))
    assert wide.meta == {
        "backend": "openai_images",
        "model": "fake-image-model",
        "served_size": "64x48",
        "resized": False,
    }
    assert wide.usage == {
        "http_requests": 1.0,
        "prompt_tokens": 4.0,
        "completion_tokens": float(IMAGE_TOKENS),
    }
    assert received[0].body == {
        "model": "fake-image-model",
        "prompt": "a labelled diagram a",
        "size": "64x48",
        "n": 1,
        "response_format": "b64_json",
        "seed": 7,
    }
    assert received[0].headers["authorization"] == f"Bearer {CANARY_KEY}"


def test_the_image_depends_on_the_seed_the_server_is_given():
    with FakeImagesServer() as server:
        first, again, other = _generator(server).generate(
            [_request("a", seed=1), _request("a", seed=1), _request("a", seed=2)]
        )
    assert first.image == again.image != other.image


def test_an_image_of_another_size_is_resized_to_the_requested_one():
    with FakeImagesServer(responder=lambda body: _png(40, 40)) as server:
        [result] = _generator(server, server_size="1024x1024").generate([_request(width=64, height=32)])
        [received] = server.requests
    assert received.body["size"] == "1024x1024"
    assert result.ok and _size(result.image) == (64, 32)
    assert result.meta["served_size"] == "40x40" and result.meta["resized"] is True


def test_a_429_is_retried_after_the_wait_the_server_asked_for():
    with FakeImagesServer(script=["429"], retry_after_s=0.3) as server:
        [result] = _generator(server).generate([_request()])
        first, second = server.requests
    assert result.ok and result.usage["http_requests"] == 2.0
    assert second.received_at - first.received_at >= 0.3


def test_a_500_is_retried_and_a_400_is_not():
    with FakeImagesServer(script=["500", None]) as server:
        [recovered] = _generator(server).generate([_request()])
    assert recovered.ok and recovered.usage["http_requests"] == 2.0
    with FakeImagesServer(script=["400"]) as server:
        [rejected] = _generator(server).generate([_request()])
        assert len(server.requests) == 1
    assert rejected.image is None
    assert "sample s1: POST /images/generations returned HTTP 400 (not retried)" in (rejected.failure or "")
    assert rejected.usage == {"http_requests": 1.0}


def test_retries_that_run_out_end_in_an_explicit_failure():
    with FakeImagesServer(script=["500", "500", "500"]) as server:
        [result] = _generator(server, max_retries=2).generate([_request()])
    assert not result.ok and result.image is None
    assert "gave up after 3 attempts; last error: HTTP 500" in (result.failure or "")


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("malformed_json", "with a body that is not JSON"),
        ("not_an_image", "holds no usable image: the image is not readable"),
        ("no_image", "holds no usable image: the reply has no 'data' items"),
    ],
)
def test_a_body_without_a_usable_image_is_a_failure_with_its_reason(fault, reason):
    with FakeImagesServer(script=[fault, fault]) as server:
        [result] = _generator(server, max_retries=1).generate([_request()])
    assert not result.ok and result.image is None
    assert result.failure.startswith("sample s1: ") and reason in result.failure


def test_one_refused_request_does_not_stop_the_others_and_results_keep_their_order():
    def refuse_the_second(body):
        if body["prompt"].endswith("b"):
            raise ValueError("prompt refused")
        return _png(8, 8, "black")

    requests = [_request("a"), _request("b"), _request("c")]
    with FakeImagesServer(responder=refuse_the_second) as server:
        reported, answered = [], {}

        def report(index, result):
            reported.append(index)
            answered[index] = result

        _generator(server, concurrency=3).stream(requests, report)
        results = [answered[index] for index in sorted(answered)]
    assert [r.sample_id for r in results] == ["a", "b", "c"]
    assert [r.ok for r in results] == [True, False, True]
    assert "prompt refused" in (results[1].failure or "")
    assert sorted(reported) == [0, 1, 2]


def test_optional_fields_and_price_follow_the_settings():
    with FakeImagesServer() as server:
        generator = _generator(
            server, send_seed=False, send_response_format=False, quality="low", price_per_image_usd=0.01
        )
        [result] = generator.generate([_request()])
        [received] = server.requests
    assert "seed" not in received.body and "response_format" not in received.body
    assert received.body["quality"] == "low"
    assert result.usage["cost_usd"] == 0.01


def test_the_api_key_appears_in_no_identity_repr_log_or_failure(caplog):
    caplog.set_level(logging.DEBUG)
    with FakeImagesServer(script=["400"]) as server:
        generator = _generator(server)
        [result] = generator.generate([_request()])
    exposed = [
        json.dumps(generator.identity()),
        repr(generator),
        caplog.text,
        result.failure or "",
        result.meta,
    ]
    assert all(CANARY_KEY not in str(text) for text in exposed)


def test_identity_holds_what_changes_the_image_and_not_the_transport_settings():
    server = FakeImagesServer()  # never started: identity needs no server
    base = _generator(server).identity()
    assert base == _generator(server, concurrency=16, timeout_s=5, max_retries=0, api_key="other").identity()
    assert base != _generator(server, server_size="512x512").identity()
    assert base != _generator(server, model="another").identity()


@pytest.mark.parametrize("settings", [{"server_size": "big"}, {"prompt": "x"}, {"max_retries": -1}])
def test_settings_that_could_only_fail_later_are_rejected(settings):
    with pytest.raises(ValueError):
        OpenAIImagesGenerator(base_url="http://127.0.0.1:9/v1", model="m", **settings)


def test_fitted_png_flattens_transparency_and_names_a_truncated_image():
    png, served = fitted_png(_png(10, 10, "#00000000"), 10, 10)
    with Image.open(io.BytesIO(png)) as image:
        assert served == (10, 10) and image.mode == "RGB" and image.getpixel((0, 0)) == (255, 255, 255)
    with pytest.raises(ValueError, match="the image is not readable"):
        fitted_png(_png(10, 10)[:-20], 10, 10)


def test_a_plain_srgb_png_of_the_size_asked_for_is_kept_as_its_own_bytes():
    def rgb_png(**options: object) -> bytes:
        buffer = io.BytesIO()
        Image.new("RGB", (12, 8), "#3366cc").save(buffer, format="PNG", **options)
        return buffer.getvalue()

    plain = rgb_png()
    assert fitted_png(plain, 12, 8) == (plain, (12, 8))  # nothing to convert: not encoded again
    profiled = rgb_png(icc_profile=ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes())
    assert fitted_png(profiled, 12, 8)[0] != profiled  # a profile to apply: converted, stripped
    assert fitted_png(_png(12, 8), 12, 8)[0] != _png(12, 8)  # RGBA: flattened
    assert fitted_png(plain, 6, 4)[0] != plain  # another size: resized


def test_image_usage_maps_reported_tokens_and_ignores_what_is_absent():
    assert image_usage({"usage": {"input_tokens": 3, "output_tokens": 272}}) == {
        "prompt_tokens": 3.0,
        "completion_tokens": 272.0,
    }
    assert image_usage({"data": []}) == {}
