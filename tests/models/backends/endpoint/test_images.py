"""Images of endpoint requests (endpoint/images.py): each image's pixels are
hashed once per request path (the body sent and its audit-trail rendering),
and the bytes sent are unchanged by that."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.fixtures.endpoint import FakeServer
from vlmrobust.models import runtime
from vlmrobust.models.backends.base import GenerationConfig, Prompt
from vlmrobust.models.backends.endpoint import images as endpoint_images
from vlmrobust.models.backends.endpoint.backend import EndpointBackend, EndpointOptions


def photo(seed: int, shape: tuple[int, int] = (48, 64)) -> Any:
    from PIL import Image

    pixels = np.random.default_rng(seed).integers(0, 256, (*shape, 3), dtype=np.uint8)
    return Image.fromarray(pixels)


def backend(url: str, **options: Any) -> EndpointBackend:
    opts = EndpointOptions(url=url, model="tiny", use_cache=False, api_key_env=None, **options)
    return EndpointBackend(opts, features=frozenset())


def test_pixels_hashed_once_per_request_and_rendering(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = runtime.pixel_digest

    def counted(image: Any) -> bytes:
        calls.append(1)
        return real(image)

    monkeypatch.setattr(runtime, "pixel_digest", counted)
    endpoint_images.ENCODED.__init__()  # type: ignore[misc]  # a fresh cache
    prompts = [Prompt(text="What is this?", image=photo(s)) for s in (1, 2, 3)]
    with FakeServer() as fake:
        b = backend(fake.url)
        b.generate(prompts, GenerationConfig(max_new_tokens=4))
        texts = [b.render(p) for p in prompts]
    assert len(calls) == 3  # before: 6, once for the request and once for the rendering
    assert all("<image/png sha256=" in t for t in texts)
    # the digest carried is the one pixel_digest gives
    assert [endpoint_images.image_digest(p.image) for p in prompts] == \
        [real(p.image) for p in prompts]
    assert len(calls) == 3


def test_a_dict_image_is_hashed_each_time() -> None:
    import io

    buf = io.BytesIO()
    photo(4).save(buf, format="PNG")
    row = {"bytes": buf.getvalue(), "path": None}
    assert endpoint_images.image_digest(row) == runtime.pixel_digest(photo(4))
    assert set(row) == {"bytes", "path"}


def sent_url(body: dict[str, Any]) -> str:
    url: str = body["messages"][0]["content"][0]["image_url"]["url"]
    return url


def decoded(url: str) -> np.ndarray:
    import base64
    import io

    from PIL import Image

    with Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))) as im:
        return np.asarray(im.convert("RGB"))


@pytest.mark.parametrize("level", [0, 1, 6, 9])
def test_png_levels_send_the_pixels_read_in_process(level: int) -> None:
    import base64
    import io

    image = photo(5, (60, 80))
    endpoint_images.ENCODED.__init__()  # type: ignore[misc]
    with FakeServer() as fake:
        backend(fake.url, png_level=level).generate(
            [Prompt(text="?", image=image)], GenerationConfig(max_new_tokens=2))
    url = sent_url(fake.received[0])
    assert url.startswith("data:image/png;base64,")
    assert np.array_equal(decoded(url), np.asarray(runtime.to_pil(image)))
    if level == 6:  # the default sends what it sent before the option existed
        buf = io.BytesIO()
        image.save(buf, format="PNG")
        assert base64.b64decode(url.split(",", 1)[1]) == buf.getvalue()


def test_source_sends_the_stored_bytes_exactly() -> None:
    import base64
    import io

    buf = io.BytesIO()
    photo(6, (60, 80)).save(buf, format="JPEG", quality=80)
    jpeg = buf.getvalue()
    from_bytes = runtime.to_pil({"bytes": jpeg, "path": None})
    no_bytes = photo(7)  # an image with no stored bytes: PNG at the chosen level
    endpoint_images.ENCODED.__init__()  # type: ignore[misc]
    prompts = [Prompt(text="?", image=from_bytes), Prompt(text="?", image=no_bytes)]
    with FakeServer() as fake:
        b = backend(fake.url, image_bytes="source", png_level=1)
        b.generate(prompts, GenerationConfig(max_new_tokens=2))
        text = b.render(prompts[0])
        assert b.server_record()["image_bytes"] == {"send": "source", "png_level": 1}
    urls = sorted((sent_url(body) for body in fake.received), key=len)
    assert [u.split(";")[0] for u in urls] == ["data:image/png", "data:image/jpeg"] or \
        [u.split(";")[0] for u in urls] == ["data:image/jpeg", "data:image/png"]
    jpeg_url = next(u for u in urls if u.startswith("data:image/jpeg"))
    assert base64.b64decode(jpeg_url.split(",", 1)[1]) == jpeg
    png_url = next(u for u in urls if u.startswith("data:image/png"))
    assert np.array_equal(decoded(png_url), np.asarray(no_bytes))
    assert "<image/jpeg sha256=" in text


def test_bytes_that_decode_to_other_pixels_are_not_sent_as_stored() -> None:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.zeros((8, 8), dtype=np.uint8)).save(buf, format="PNG")  # grey
    image = runtime.to_pil({"bytes": buf.getvalue(), "path": None})
    assert getattr(image, runtime.SOURCE_ATTR, None) is None
    url = endpoint_images.data_url(image, endpoint_images.ImageEncoding("source", 6))
    assert url.startswith("data:image/png;base64,")


@pytest.mark.parametrize(("options", "flag"), [({"png_level": 10}, "--endpoint-png-level 10"),
                                               ({"png_level": True}, "--endpoint-png-level"),
                                               ({"image_bytes": "jpeg"},
                                                "--endpoint-image-bytes 'jpeg'")])
def test_bad_encoding_options_are_refused_naming_the_flag(options: dict[str, Any],
                                                         flag: str) -> None:
    from vlmrobust.core.errors import VlmrobustError

    with pytest.raises(VlmrobustError, match=flag):
        EndpointOptions(url="http://localhost:8000/v1", model="m", **options)


def test_predict_sends_the_rows_stored_bytes_and_records_it(
        tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    import base64

    import pyarrow.parquet as pq

    from tests.fixtures.predict import write_mcq
    from vlmrobust.cli.main import main
    from vlmrobust.evaluation.predictions.meta import read_prediction_meta

    dataset = write_mcq(tmp_path / "ds", {"a": 3}, with_class_ids=False)
    stored = {r["bytes"] for f in sorted((dataset / "data" / "a").glob("*.parquet"))
              for r in pq.read_table(f, columns=["image"]).column("image").to_pylist()}
    args = ["predict", "--model", "endpoint:tiny-served", "--dataset", str(dataset),
            "--endpoint-api", "openai", "--api-key-env", "NO_KEY_HERE", "--no-endpoint-cache",
            "--no-progress", "--mode", "generate", "--max-new-tokens", "2"]
    with FakeServer() as fake:
        assert main([*args, "--out", str(tmp_path / "bad.parquet"), "--endpoint-url", fake.url,
                     "--endpoint-png-level", "12"]) != 0
        err = capsys.readouterr().err.strip()
        assert "--endpoint-png-level 12: give 0 to 9" in err and "Traceback" not in err
        assert not (tmp_path / "bad.parquet").exists()
        out = tmp_path / "p.parquet"
        assert main([*args, "--out", str(out), "--endpoint-url", fake.url,
                     "--endpoint-image-bytes", "source"]) == 0
    sent = {base64.b64decode(sent_url(b).split(",", 1)[1]) for b in fake.received
            if b.get("messages")}
    assert stored and sent == stored
    assert read_prediction_meta(out)["server"]["image_bytes"] == {"send": "source",
                                                                  "png_level": 6}
