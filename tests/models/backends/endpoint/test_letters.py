"""Option letters over an endpoint (issue 36 item 3): by token id where the
server takes vLLM's ``logprob_token_ids`` (the value is the in-process one-token
quantity), else from the top-20 listing with unlisted letters marked truncated,
never given an invented probability. The fakes only inject what a real server
returns (vLLM's /tokenize, /detokenize and token-id entries; a listing that
leaves letters out)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.fixtures.endpoint import FakeServer, completion
from tests.fixtures.predict import write_mcq
from vlmrobust.cli.main import main
from vlmrobust.evaluation.predictions.meta import read_prediction_meta
from vlmrobust.evaluation.predictions.read import read_predictions
from vlmrobust.metrics.calibration import calibration_report
from vlmrobust.models.backends.answer_tokens import single_token_ids
from vlmrobust.models.backends.base import Prompt
from vlmrobust.models.backends.endpoint.backend import EndpointBackend, EndpointOptions

JUNK = [(f"junk{i}", -6.0 - i / 10) for i in range(20)]


def letters_in(body: dict[str, Any]) -> list[str]:
    text = "".join(c.get("text", "") for c in body["messages"][0]["content"])
    return re.findall(r"^([A-Z])\. ", text, flags=re.M)


def top20(n: int, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    """A top-20 listing: with 5 options E is not listed, with 3 no letter is;
    no /tokenize route (404), as OpenAI."""
    if "max_tokens" not in body:
        return 404, {}, b'{"detail": "Not Found"}'
    found = letters_in(body)
    values = {"A": -0.7, "B": -1.1, "C": -1.9, "D": -2.6, "E": -3.0}
    shown = [] if len(found) == 3 else [c for c in found if c != "E"]
    top = sorted([(c, values[c]) for c in shown] + JUNK, key=lambda t: -t[1])[:20]
    return 200, {}, json.dumps(completion(body, top=top)).encode()


def run_predict(url: str, tmp_path: Path, n: int, name: str = "p.parquet") -> tuple[Path, Path]:
    dataset = write_mcq(tmp_path / "ds", {"default": n}, with_class_ids=False)
    out = tmp_path / name
    rc = main(["predict", "--model", "endpoint:tiny", "--dataset", str(dataset), "--out", str(out),
               "--endpoint-url", url, "--api-key-env", "NO_SUCH_KEY_VAR", "--no-endpoint-cache",
               "--mode", "letter", "--no-progress"])
    assert rc == 0
    return dataset, out


def test_unlisted_letters_are_marked_and_left_out_of_calibration(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeServer(top20) as fake:
        dataset, out = run_predict(fake.url, tmp_path, 8)
    assert "marked truncated" in capsys.readouterr().err
    pf = read_predictions(out)
    k = np.diff(pf.offsets)
    assert pf.truncated is not None
    # K = 2 + i % 4: E unlisted in the 5-option rows, no letter in the 3-option rows
    want = np.where(k == 5, 1.0, np.where(k == 3, 3.0, np.nan))
    np.testing.assert_array_equal(pf.truncated, want)
    assert read_prediction_meta(out)["server"]["letter_logprobs"].startswith("top-20")
    scores = tmp_path / "scores.json"
    assert main(["score", "--dataset", str(dataset), "--predictions", str(out),
                 "--out", str(scores)]) == 0
    section = json.loads(scores.read_text())["datasets"]["imagenet-mcq"]
    cfg = section["configs"]["default"]
    assert (cfg["n"], cfg["truncated_excluded"], cfg["undetermined_excluded"]) == (8, 4, 2)
    assert section["truncated"]["calibration_excluded"] == 4
    assert section["truncated"]["accuracy_excluded"] == 2
    logits = [pf.logits_flat[a:b] for a, b in zip(pf.offsets[:-1], pf.offsets[1:], strict=True)]
    answers = [(ki - (i % ki)) % ki for i, ki in enumerate(k)]  # write_mcq's answer rule
    # accuracy over the 6 rows whose argmax is determined (a listed letter outranks E)
    determined = [i for i in range(8) if k[i] != 3]
    assert cfg["accuracy"] == pytest.approx(
        np.mean([int(np.argmax(logits[i])) == answers[i] for i in determined]))
    # ECE over the 4 rows whose letters were all listed: the same as computing it on them
    full = [i for i in range(8) if k[i] in (2, 4)]
    pad = np.full((len(full), 4), -np.inf)
    for j, i in enumerate(full):
        pad[j, :k[i]] = logits[i]
    want_cal = calibration_report(pad, np.asarray([answers[i] for i in full]), seed=0)
    assert cfg["ece"] == pytest.approx(want_cal.ece)


def test_the_truncated_column_round_trips_through_jsonl_and_validate(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeServer(top20) as fake:
        dataset, out = run_predict(fake.url, tmp_path, 4, "p.jsonl")
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x.get("truncated") for x in lines] == [None, 3, None, 1]
    assert main(["validate", "--dataset", str(dataset), "--predictions", str(out)]) == 0
    # submit stores a JSONL run as parquet: the column goes with it (re-scoring agrees)
    from vlmrobust.evaluation.predictions.stored import predictions_parquet_bytes

    stored = tmp_path / "stored.parquet"
    stored.write_bytes(predictions_parquet_bytes(read_predictions(out), {}))
    np.testing.assert_array_equal(read_predictions(stored).truncated, [np.nan, 3, np.nan, 1])

    from vlmrobust.evaluation.validate.check import check_predictions
    from vlmrobust.evaluation.validate.dataset_index import load_dataset_index

    lines[3]["truncated"] = 6  # more than the row's 5 options
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(x) + "\n" for x in lines))
    problems = check_predictions(load_dataset_index(dataset), read_predictions(bad))
    assert [p.kind for p in problems] == ["truncated out of range"]


def vllm_with_token_ids(tok: Any, logprobs: np.ndarray) -> Any:
    """vLLM's /tokenize, /detokenize and chat completions with
    ``logprob_token_ids`` + ``return_tokens_as_token_ids`` (the chat template:
    ``USER: ...\\nASSISTANT:``), log-probs from ``logprobs`` over the vocabulary."""

    def action(n: int, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        if "tokens" in body:  # /detokenize
            return 200, {}, json.dumps({"prompt": tok.decode(body["tokens"])}).encode()
        if "max_tokens" not in body:  # /tokenize, a prompt or chat messages
            text = (body["prompt"] if "prompt" in body
                    else f"USER: {body['messages'][0]['content']}\nASSISTANT:")
            ids = tok.encode(text, add_special_tokens=False)
            return 200, {}, json.dumps({"tokens": ids, "count": len(ids)}).encode()
        ids = body.get("logprob_token_ids") or []
        resp = completion(body)
        best = int(np.argmax(logprobs))
        entries = [{"token": f"token_id:{i}", "logprob": float(logprobs[i])} for i in ids]
        resp["choices"][0]["logprobs"] = {"content": [{
            "token": f"token_id:{best}", "logprob": float(logprobs[best]),
            "top_logprobs": entries}]}
        return 200, {}, json.dumps(resp).encode()

    return action


def test_token_id_logprobs_equal_the_in_process_quantity() -> None:
    from scipy.special import log_softmax

    from tests.fixtures.vlm import make_tokenizer

    tok = make_tokenizer()
    v = log_softmax(np.random.default_rng(3).normal(0, 3, len(tok)))
    with FakeServer(vllm_with_token_ids(tok, v)) as fake:
        b = EndpointBackend(EndpointOptions(url=fake.url, model="tiny", api_key_env=None,
                                            use_cache=False))
        got = b.next_token_logprobs([Prompt(text="Which?")], ["A", "B", "C"])
        sent = [x for x in fake.received if "logprob_token_ids" in x]
    # the hf backend's rule on the same tokenizer: " A" after "ASSISTANT:"
    ids = single_token_ids(tok, "\nASSISTANT:", ["A", "B", "C"], "tiny")
    assert ids == [tok.encode(" " + c, add_special_tokens=False)[-1] for c in "ABC"]
    np.testing.assert_allclose(got[0], v[ids], rtol=1e-6)
    assert sent and sent[0]["logprob_token_ids"] == ids
    assert sent[0]["return_tokens_as_token_ids"] is True
    # not the log-sum-exp over "A" and " A" that the top-20 path once took
    other = tok.encode("A", add_special_tokens=False)[0]
    assert other != ids[0] and not np.isclose(got[0, 0], np.logaddexp(v[ids[0]], v[other]))
    assert b.server_record()["letter_logprobs"].startswith("token ids")


def test_sglang_token_ids_logprob_equal_the_in_process_quantity(tmp_path: Path) -> None:
    """--endpoint-engine sglang: the letters' ids by the server's tokenizer after
    the prompt rendered as in process, their log-probs from /generate's
    token_ids_logprob: the stand-in's log-prob of that one token after T."""
    from PIL import Image
    from transformers import AutoProcessor

    from tests.fixtures.engine_cache import CountingEngine, make_qwen_processor, sglang
    from vlmrobust.models.backends.endpoint.protocol import image_data_url
    from vlmrobust.models.backends.hf import answer_separator, chat_prompt

    proc = make_qwen_processor(tmp_path / "qwen")
    pixels = np.random.default_rng(2).integers(0, 255, (8, 8, 3), dtype=np.uint8)
    prompt = Prompt("What is this?\nA. cat\nB. dog\nC. fish", image=Image.fromarray(pixels))
    with CountingEngine() as fake:
        b = sglang(fake.url, proc)
        got = b.next_token_logprobs([prompt], ["A", "B", "C"])
        text = chat_prompt(AutoProcessor.from_pretrained(proc), prompt.text, True)
        url = image_data_url(prompt.image)
        n = len(fake.ids(text, url))
        want = []
        for c in "ABC":
            full = fake.ids(text + answer_separator(text) + c, url)
            assert len(full) == n + 1  # one token after T
            want.append(fake.logprobs(full)[n])
        assert '"text"' in b.render(prompt)  # the audit trail is the /generate prompt
        assert b.server_record()["letter_logprobs"].startswith("token ids (SGLang")
    np.testing.assert_allclose(got[0], want, rtol=1e-6)
