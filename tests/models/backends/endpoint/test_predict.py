"""`vlmrobust predict --model endpoint:NAME` end to end, with a fake server that
returns letter log-probs in OpenAI's format and injects a lasting failure
mid-run: the run ends in one line, the resumed run completes with the same
predictions as an uninterrupted one, no request is answered twice, and the
API key is in no file and no output."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from tests.fixtures.endpoint import DROP, FakeServer, completion
from tests.fixtures.predict import write_mcq
from vlmrobust.cli.main import main
from vlmrobust.evaluation.predictions.meta import read_prediction_meta

SECRET = "sk-fake-5e2d9a0c7b3f4e18"
KEY_ENV = "VLMROBUST_TEST_PREDICT_KEY"


def letter_logprobs(body: dict[str, Any]) -> list[tuple[str, float]]:
    """Five letters' log-probs, a function of the request's text (so rows differ)."""
    text = json.dumps(body["messages"], sort_keys=True)
    seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
    raw = np.random.default_rng(seed).normal(size=5)
    lp = raw - np.logaddexp.reduce(raw)
    return sorted(((" " + c, float(v)) for c, v in zip("ABCDE", lp, strict=True)),
                  key=lambda t: -t[1])


# how the server fails, and what the one line then says
FAILURES: dict[str, tuple[tuple[int, dict[str, str], bytes], str]] = {
    "5xx": ((503, {}, b'{"error": {"message": "overloaded"}}'), "HTTP 503: overloaded"),
    "429 storm": ((429, {"Retry-After": "0"}, b'{"error": {"message": "Rate limit"}}'),
                  "HTTP 429: Rate limit"),
    "malformed JSON": ((200, {}, b'{"choices": [{"message": '), "not valid JSON"),
    "server gone": ((DROP, {}, b""), "connection lost"),
    "timeout": ((-1, {}, b""), "no response within 0.5 s"),
}


class Flaky:
    """Answers like a server with logprobs; from request ``fail_from`` on, fails
    (``kind``, see FAILURES) for good until ``healed``."""

    def __init__(self, fail_from: int | None = None, kind: str = "5xx") -> None:
        self.fail_from = fail_from
        self.kind = kind
        self.healed = False
        self.answered: list[str] = []

    def __call__(self, n: int, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        if "max_tokens" not in body:  # /tokenize (letter token ids): not offered, as OpenAI
            return 404, {}, b'{"detail": "Not Found"}'
        if "prompt_logprobs" in body:
            return 400, {}, b'{"error": {"message": "prompt_logprobs is not supported"}}'
        if self.fail_from is not None and n >= self.fail_from and not self.healed:
            failure = FAILURES[self.kind][0]
            if failure[0] == -1:  # silent past --endpoint-timeout; the client has gone
                time.sleep(1.2)
                return DROP, {}, b""
            return failure
        self.answered.append(json.dumps(body, sort_keys=True))
        return 200, {}, json.dumps(completion(body, top=letter_logprobs(body))).encode()


def predict(url: str, dataset: Path, out: Path, cache: Path | None, *extra: str) -> int:
    cache_flags = ["--endpoint-cache", str(cache)] if cache else ["--no-endpoint-cache"]
    return main(["predict", "--model", "endpoint:tiny-served", "--dataset", str(dataset),
                 "--out", str(out), "--endpoint-url", url, "--api-key-env", KEY_ENV,
                 "--endpoint-retries", "1", "--endpoint-concurrency", "2", "--batch-size", "3",
                 "--endpoint-timeout", "0.5",
                 "--no-progress", "--mode", "letter", *cache_flags, *extra])


@pytest.mark.parametrize("kind", list(FAILURES))
def test_predict_resumes_after_a_lasting_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 kind: str) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    dataset = write_mcq(tmp_path / "ds", {"default": 10}, with_class_ids=False)
    out, cache = tmp_path / "run" / "p.parquet", tmp_path / "cache"
    flaky = Flaky(fail_from=1 + 5, kind=kind)  # the logprob probe, five rows, then failures
    with FakeServer(flaky) as fake:
        assert predict(fake.url, dataset, out, cache) == 1
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and err.startswith("error: ")
        assert FAILURES[kind][1] in err and fake.url in err
        assert not out.exists()
        first = list(flaky.answered)

        flaky.healed = True
        assert predict(fake.url, dataset, out, cache) == 0
        resumed = flaky.answered[len(first):]
        # the resumed run asked only for what was missing: no request answered in
        # both runs (within one run a request may be answered twice: under load the
        # server can pass the 0.5 s timeout and --endpoint-retries 1 asks again)
        assert not set(resumed) & set(first)

        clean = tmp_path / "clean" / "p.parquet"
        before = len(flaky.answered)
        assert predict(fake.url, dataset, clean, None) == 0
        uninterrupted = flaky.answered[before:]
        # ... and nothing was lost: both runs asked the same (rows with the same image
        # and question are the same request, sent once through the cache)
        assert set(first + resumed) == set(uninterrupted)
        assert len(uninterrupted) == 1 + 10  # the logprob probe and one request per row
    got, want = pq.read_table(out).to_pylist(), pq.read_table(clean).to_pylist()
    assert [r["id"] for r in got] == [r["id"] for r in want] and len(got) == 10
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g["logits"], w["logits"])
        assert len(g["logits"]) == len(w["logits"]) >= 2
    meta = read_prediction_meta(out)
    assert meta["model"] == "endpoint:tiny-served" and meta["backend"] == "endpoint"
    assert meta["mode"] == "letter"
    assert meta["server"]["server_url"] == fake.url
    assert meta["server"]["served_model"] == "tiny-served"
    assert main(["validate", "--dataset", str(dataset), "--predictions", str(out)]) == 0

    # the key went in the Authorization header only
    assert all(h.get("Authorization") == f"Bearer {SECRET}" for h in fake.headers)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    captured = capsys.readouterr()
    assert SECRET not in captured.out + captured.err


def test_endpoint_flags_on_another_model_are_refused(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    dataset = write_mcq(tmp_path / "ds", {"default": 2}, with_class_ids=False)
    rc = main(["predict", "--model", "vlm:org/name", "--dataset", str(dataset), "--out",
               str(tmp_path / "p.parquet"), "--endpoint-url", "http://localhost:1/v1"])
    assert rc == 1
    assert "--endpoint-* options apply to endpoint: models" in capsys.readouterr().err


@pytest.mark.parametrize(("flags", "message"), [
    (["--endpoint-retries", "-1"], "--endpoint-retries -1: give 0 to 100"),
    (["--endpoint-concurrency", "0"], "--endpoint-concurrency 0: give 1 to 1024"),
    (["--endpoint-timeout", "0"], "--endpoint-timeout 0.0: give seconds > 0"),
    (["--api-key-env", "sk-123"], "NAME of an environment variable"),
    ([], "give the server's base URL with --endpoint-url"),
])
def test_bad_endpoint_flags_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         flags: list[str], message: str) -> None:
    dataset = write_mcq(tmp_path / "ds", {"default": 2}, with_class_ids=False)
    url = [] if not flags else ["--endpoint-url", "http://127.0.0.1:9/v1"]
    rc = main(["predict", "--model", "endpoint:m", "--dataset", str(dataset), "--out",
               str(tmp_path / "p.parquet"), "--mode", "generate", *url, *flags])
    err = capsys.readouterr().err.strip()
    assert rc == 1 and err.count("\n") == 0 and message in err
    assert not (tmp_path / "p.parquet").exists()
