"""The answerer and verifier of `discover sample` behind a REAL OpenAI-compatible
server process (`transformers serve` on a tiny random LLaVA): the records equal
those of the same model in process (greedy), and a judge reply without verdict
lines (a random model's) is recorded as unparsable and invalid."""

from __future__ import annotations

import pytest

from tests.fixtures.discover import planted_folder, tiny_questioner
from vlmrobust.cli.main import main
from vlmrobust.core.discover_records import read_records

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
# one worker under xdist for the session's transformers-serve (tests/conftest.py)
pytestmark = pytest.mark.xdist_group("served-llava")


def test_endpoint_roles_equal_in_process(served_llava, tmp_path, monkeypatch) -> None:
    model_dir, url = served_llava
    monkeypatch.setenv("VLMROBUST_ENDPOINT_CACHE", str(tmp_path / "cache"))
    images = planted_folder(tmp_path, n=3)
    questioner = tiny_questioner(tmp_path, prior_steps=120)
    common = ["--questioner", str(questioner), "--images", str(images),
              "--max-new-tokens", "40", "--answer-max-new-tokens", "6",
              "--judge-max-new-tokens", "6", "--device", "cpu"]
    served_out, local_out = tmp_path / "served.jsonl", tmp_path / "local.jsonl"
    assert main(["discover", "sample", *common, "--answerer", f"endpoint:{model_dir}",
                 "--answerer-url", url, "--verifier", f"endpoint:{model_dir}",
                 "--verifier-url", url, "--out", str(served_out)]) == 0
    assert main(["discover", "sample", *common, "--answerer", f"vlm:{model_dir}",
                 "--verifier", f"vlm:{model_dir}", "--out", str(local_out)]) == 0
    served_recs, local_recs = read_records(served_out), read_records(local_out)
    asked = [r for r in served_recs if r.question is not None]
    assert len(served_recs) == 6 and asked
    # every answer and every verdict crossed the server (and is cached)
    sent = sum(1 for p in (tmp_path / "cache").rglob("*") if p.is_file())
    assert sent >= 2 * len({(r.image, r.question) for r in asked})
    assert all(r.answer for r in asked)
    assert not any(r.verifier_parsed or r.valid for r in asked)
    strip = ("answerer", "verifier")
    assert [{k: v for k, v in r.__dict__.items() if k not in strip} for r in served_recs] == \
        [{k: v for k, v in r.__dict__.items() if k not in strip} for r in local_recs]
    assert {r.answerer for r in served_recs} == {f"endpoint:{model_dir}"}
