"""The endpoint backend against a REAL OpenAI-compatible server process:
``transformers serve`` serving a tiny random LLaVA built from a config, on a free
localhost port. Its greedy texts equal the in-process model's; it returns no
logprobs, so the letter and likelihood readers are refused in one line; a re-run
is answered by the cache; the API key is written nowhere.

Not Qwen2-VL: for qwen* model types transformers serve passes the output through
its response parser (surrounding whitespace stripped, special tokens kept), so
the served text is not the plain decode that the in-process backend returns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models.backends.base import GENERATE, GenerationConfig, Prompt
from vlmrobust.models.backends.endpoint.backend import ENDPOINT_FAMILY, EndpointBackend

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
# one worker under xdist for the session's transformers-serve (tests/conftest.py)
pytestmark = pytest.mark.xdist_group("served-llava")

KEY_ENV = "VLMROBUST_TEST_ENDPOINT_KEY"
SECRET = "sk-test-3f9c1e0b7d2a4c65"


def images(n: int) -> list[Any]:
    from PIL import Image

    out = []
    for i in range(n):
        rng = np.random.default_rng([7, i])  # one seed per item
        out.append(Image.fromarray(rng.integers(0, 256, (28 + 4 * i, 36, 3), dtype=np.uint8)))
    return out


def prompts(n: int) -> list[Prompt]:
    return [Prompt(text=f"What is in this image? A. cat B. dog {i}", image=im)
            for i, im in enumerate(images(n))]


def in_process(model_dir: Path) -> Any:
    """The same model in this process: the hf backend (greedy, left-padded batches)."""
    from vlmrobust.models.backends.hf import load_hf

    return load_hf(str(model_dir), {"device": "cpu"})


def load(url: str, model_dir: Path, cache: Path, **extra: Any) -> EndpointBackend:
    b = ENDPOINT_FAMILY.load(str(model_dir), {"url": url, "cache_dir": cache,
                                              "api_key_env": KEY_ENV, **extra})
    assert isinstance(b, EndpointBackend)
    return b


def test_generate_equals_in_process_greedy_and_rerun_is_free(
        served_llava: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model_dir, url = served_llava
    monkeypatch.setenv(KEY_ENV, SECRET)
    items = prompts(5)
    # transformers serve fails on stop strings with a VLM processor: applied here only
    b = load(url, model_dir, tmp_path / "cache", concurrency=3, server_stop=False)
    probes = b.sent  # what the server offers is asked at load
    texts = b.generate(items, GenerationConfig(max_new_tokens=12))
    assert b.sent - probes == 5
    hf = in_process(model_dir)
    assert texts == hf.generate(items, GenerationConfig(max_new_tokens=12))
    assert len(set(texts)) > 1  # the images change the answers: they reached the model

    stops = GenerationConfig(max_new_tokens=12, stop=(texts[0][3:5], texts[1][2:4]))
    cut = b.generate(items, stops)
    assert cut == hf.generate(items, stops)
    first_stop = min(texts[0].find(s) for s in stops.stop if s in texts[0])
    assert cut[0] == texts[0][:first_stop] and len(cut[0]) < len(texts[0])

    again = load(url, model_dir, tmp_path / "cache", server_stop=False)
    probes = again.sent  # a refused probe is not cached: asked again
    assert probes == 1
    assert again.generate(items, GenerationConfig(max_new_tokens=12)) == texts
    assert again.sent == probes

    meta = again.server_record()
    # the local folder is published as its base name and a hash (issue 36 item 4)
    assert meta["server_url"] == url and meta["served_model"].startswith(f"{model_dir.name}@")
    rendered = again.render(items[0])
    assert str(model_dir) not in rendered and meta["served_model"] in rendered
    assert items[0].text in rendered and "<image/png sha256=" in rendered
    assert "base64" not in rendered

    # the key went in the Authorization header only: no file, metadata or render holds it
    written = [p.read_bytes() for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert written and not any(SECRET.encode() in w for w in written)
    assert SECRET not in repr(meta) and SECRET not in rendered


def test_logprob_readers_are_refused_in_one_line(served_llava: tuple[Path, str],
                                                 tmp_path: Path) -> None:
    model_dir, url = served_llava
    b = load(url, model_dir, tmp_path / "cache")
    assert b.capabilities == frozenset({GENERATE})
    with pytest.raises(VlmrobustError) as exc:
        b.next_token_logprobs(prompts(1), ["A", "B"])
    msg = str(exc.value)
    assert "\n" not in msg and url in msg and "returns no logprobs" in msg
    assert "letter reader" in msg
    with pytest.raises(VlmrobustError) as exc:
        b.continuation_logprobs(prompts(1), [["cat", "dog"]])
    msg = str(exc.value)
    assert "\n" not in msg and url in msg and "prompt_logprobs" in msg
    assert "likelihood reader" in msg


@pytest.mark.parametrize("mode", ["letter", "likelihood:avg"])
def test_predict_refuses_logprob_modes_in_one_line(served_llava: tuple[Path, str], tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str],
                                                   mode: str) -> None:
    from tests.fixtures.predict import write_mcq
    from vlmrobust.cli.main import main

    model_dir, url = served_llava
    dataset = write_mcq(tmp_path / "ds", {"default": 2}, with_class_ids=False)
    out = tmp_path / "p.parquet"
    rc = main(["predict", "--model", f"endpoint:{model_dir}", "--endpoint-url", url,
               "--endpoint-cache", str(tmp_path / "cache"), "--mode", mode,
               "--dataset", str(dataset), "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert rc == 1 and err.count("\n") == 0
    assert url in err and f"--mode {mode}" in err
    assert ("returns no logprobs" if mode == "letter" else "prompt_logprobs") in err
    assert not out.exists() and not (tmp_path / ".p.parquet.partial").exists()


def test_predict_generate_through_the_server_equals_in_process(
        served_llava: tuple[Path, str], tmp_path: Path) -> None:
    """`predict --mode generate` on endpoint:MODEL and on vlm:MODEL write the same
    raw texts and matched predictions; the endpoint's file validates and scores."""
    import pyarrow.parquet as pq

    from tests.fixtures.predict import write_mcq
    from vlmrobust.cli.main import main
    from vlmrobust.evaluation.predictions.meta import read_prediction_meta

    model_dir, url = served_llava
    dataset = write_mcq(tmp_path / "ds", {"default": 5}, with_class_ids=False)
    common = ["--dataset", str(dataset), "--mode", "generate", "--max-new-tokens", "8",
              "--stop", "e", "--batch-size", "3", "--no-progress"]
    served_out, local_out = tmp_path / "served.parquet", tmp_path / "local.parquet"
    assert main(["predict", "--model", f"endpoint:{model_dir}", "--endpoint-url", url,
                 "--endpoint-cache", str(tmp_path / "cache"), "--endpoint-local-stop",
                 "--out", str(served_out), *common]) == 0
    assert main(["predict", "--model", f"vlm:{model_dir}", "--device", "cpu",
                 "--out", str(local_out), *common]) == 0
    served_rows, local_rows = pq.read_table(served_out).to_pylist(), \
        pq.read_table(local_out).to_pylist()
    assert [r["text"] for r in served_rows] == [r["text"] for r in local_rows]
    assert any(r["text"] for r in served_rows)  # the comparison is not between empty texts
    assert [r["prediction"] for r in served_rows] == [r["prediction"] for r in local_rows]
    assert all(r["prompt_text"].startswith('{"messages": ') for r in served_rows)
    meta = read_prediction_meta(served_out)
    assert meta["mode"] == "generate" and meta["backend"] == "endpoint"
    assert meta["server"]["server_url"] == url
    assert main(["validate", "--dataset", str(dataset), "--predictions", str(served_out)]) == 0
    assert main(["score", "--dataset", str(dataset), "--predictions", str(served_out),
                 "--out", str(tmp_path / "scores.json")]) == 0


def test_stop_string_falls_back_at_once_and_no_local_path_is_published(
        served_llava: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """transformers serve answers a VLM's stop string with HTTP 500: one probe,
    then --stop applied here with a one-line note (it took 6 retries, 42 s, and
    failed). Served from a local folder, the model's path is in no file that
    predict + submit write (it was in every prompt_text and server.served_model)."""
    import time

    from tests.fixtures.predict import write_mcq
    from vlmrobust.cli.main import main

    model_dir, url = served_llava
    dataset = write_mcq(tmp_path / "ds", {"default": 3}, with_class_ids=False)
    out, subs = tmp_path / "run" / "p.parquet", tmp_path / "subs"
    start = time.monotonic()
    assert main(["predict", "--model", f"endpoint:{model_dir}", "--endpoint-url", url,
                 "--no-endpoint-cache", "--dataset", str(dataset), "--mode", "generate",
                 "--max-new-tokens", "8", "--stop", "e", "--no-progress",
                 "--out", str(out)]) == 0
    took = time.monotonic() - start
    notes = [line for line in capsys.readouterr().err.splitlines() if "stop strings" in line]
    assert len(notes) == 1 and "applying --stop here" in notes[0]
    assert took < 30, took  # no retry storm on the refusal
    assert main(["submit", "--submissions", str(subs), "--model-id", "served",
                 "--dataset", str(dataset), "--predictions", str(out)]) == 0
    written = [p for p in [*out.parent.rglob("*"), *subs.rglob("*")] if p.is_file()]
    assert len(written) >= 3
    for path in written:
        data = path.read_bytes()
        for local in {str(model_dir), str(model_dir.resolve())}:
            assert local.encode() not in data, path
    assert f"{model_dir.name}@".encode() in out.read_bytes()  # the public name instead
