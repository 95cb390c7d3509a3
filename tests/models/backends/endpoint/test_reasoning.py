"""OpenAI reasoning models over the endpoint backend (issue 36 item 2), against a
fake that only enforces OpenAI's published parameter rules for o-series models:
``max_tokens`` refused ("Use 'max_completion_tokens' instead"), any
``temperature`` but the default refused, ``stop`` and ``logprobs`` refused
(o3 / o4-mini). The happy path of each primitive is tested against
``transformers serve`` (test_server.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.endpoint import FakeServer, completion
from tests.fixtures.predict import write_mcq
from vlmrobust.cli.main import main
from vlmrobust.evaluation.predictions.meta import read_prediction_meta


def refuse(param: str, message: str) -> tuple[int, dict[str, str], bytes]:
    return 400, {}, json.dumps({"error": {
        "message": message, "type": "invalid_request_error", "param": param,
        "code": "unsupported_parameter"}}).encode()


def o_series(n: int, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    """OpenAI's rules for o-series chat completions, then an answer with reasoning."""
    if "max_tokens" in body:
        return refuse("max_tokens", "Unsupported parameter: 'max_tokens' is not supported "
                      "with this model. Use 'max_completion_tokens' instead.")
    if "temperature" in body and body["temperature"] != 1:
        return refuse("temperature", "Unsupported value: 'temperature' does not support 0 "
                      "with this model. Only the default (1) value is supported.")
    for param in ("stop", "logprobs", "top_logprobs"):
        if param in body:
            return refuse(param, f"Unsupported parameter: '{param}' is not supported with "
                          "this model.")
    if body.get("reasoning_effort") not in (None, "low", "medium", "high"):
        return refuse("reasoning_effort", "Invalid value for 'reasoning_effort'.")
    resp = completion(body)
    resp["choices"][0]["message"]["content"] = "The answer is A"
    resp["choices"][0]["message"]["reasoning_content"] = "Two options; the first fits."
    resp["usage"]["completion_tokens_details"] = {"reasoning_tokens": 64}
    return 200, {}, json.dumps(resp).encode()


def predict(url: str, tmp_path: Path, *extra: str) -> tuple[int, Path, Path]:
    dataset = write_mcq(tmp_path / "ds", {"default": 4}, with_class_ids=False)
    out = tmp_path / "p.parquet"
    rc = main(["predict", "--model", "endpoint:o4-mini", "--dataset", str(dataset),
               "--out", str(out), "--endpoint-url", url, "--api-key-env", "NO_SUCH_KEY_VAR",
               "--no-endpoint-cache", "--mode", "generate", "--no-progress", *extra])
    return rc, dataset, out


@pytest.mark.parametrize("explicit", [False, True], ids=["detected", "--endpoint-api"])
def test_o_series_generate_completes_and_keeps_the_reasoning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], explicit: bool) -> None:
    flags = ["--endpoint-api", "openai-reasoning"] if explicit else []
    with FakeServer(o_series) as fake:
        rc, dataset, out = predict(fake.url, tmp_path, "--stop", "\n",
                                   "--endpoint-reasoning-effort", "low", *flags)
    err = capsys.readouterr().err
    assert rc == 0, err
    answered = [b for b in fake.received if "max_completion_tokens" in b and "stop" not in b]
    assert len(answered) == 4  # one per row, stops applied here
    assert all("temperature" not in b and b["reasoning_effort"] == "low" for b in answered)
    assert ("max_completion_tokens" in err) != explicit  # the note says why it switched
    assert "refuses stop strings" in err  # o4-mini takes no stop: applied here
    meta = read_prediction_meta(out)
    assert meta["server"]["api"] == "openai-reasoning"
    assert meta["server"]["reasoning_effort"] == "low"
    assert meta["server"]["reasoning"] == {"rows": 4, "chars": 4 * 28, "tokens": 4 * 64}
    assert main(["validate", "--dataset", str(dataset), "--predictions", str(out)]) == 0


def test_reasoning_is_a_column_and_counted_over_a_killed_and_resumed_run(
        tmp_path: Path) -> None:
    """The reasoning text of every row is in the predictions (column
    ``reasoning``), and the server record's totals count the rows of every
    process of the run, read from the journal, not only the last process's."""
    from vlmrobust.evaluation.predictions.read import read_predictions

    answered: list[int] = []

    def dies_after_two(n: int, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        if len(answered) >= 2:  # the server goes down for good: predict stops
            return 400, {}, b'{"error": {"message": "server shutting down"}}'
        answered.append(n)
        return o_series(n, body)

    flags = ["--endpoint-api", "openai-reasoning", "--batch-size", "1",
             "--endpoint-concurrency", "1"]
    with FakeServer(dies_after_two) as fake:
        rc, dataset, out = predict(fake.url, tmp_path, *flags)
    assert rc != 0 and not out.exists()
    with FakeServer(o_series) as fake:
        rc, dataset, out = predict(fake.url, tmp_path, *flags)
        resent = [b for b in fake.received if "max_completion_tokens" in b]
    assert rc == 0
    assert len(resent) == 2  # the journal kept the first two rows
    meta = read_prediction_meta(out)
    assert meta["server"]["reasoning"] == {"rows": 4, "chars": 4 * 28, "tokens": 4 * 64}
    pf = read_predictions(out)
    assert pf.reasoning is not None
    assert pf.reasoning.tolist() == ["Two options; the first fits."] * 4
    assert main(["validate", "--dataset", str(dataset), "--predictions", str(out)]) == 0
