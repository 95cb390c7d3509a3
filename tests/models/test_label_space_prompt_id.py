"""A vlm read over a label space records the prompt it was really asked by: a
tiny random LLaVA through `vlmrobust predict`, with a spy on the hf backend's
primitives that records each call's text (the model still runs), the recorded
``prompt_id`` names the LABEL_SPACE_PROMPTS entry whose rendering is exactly the
text sent (checked against the seed paper's wording written out here); a
prompt that cannot ask over a label space is refused in one line naming those
that can, before the model is asked anything or a file is written; the id
reaches the submission and the leaderboard's rows."""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml

from tests.fixtures import vlm as vlm_fixtures
from tests.fixtures.classification import index_rows, toy_label_space, write_classification
from vlmrobust.cli.main import main
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.predict.dataset import predict_dataset
from vlmrobust.evaluation.predict.spec import BackendOptions, RunSpec
from vlmrobust.evaluation.predictions.meta import read_prediction_meta
from vlmrobust.models import load_adapter
from vlmrobust.models.backends.hf import HfBackend
from vlmrobust.models.label_space_prompts import LABEL_SPACE_PROMPTS
from vlmrobust.models.vlm import VlmAdapter

NAMES = toy_label_space().names
# the seed paper's wording (appendix A.4), written out rather than read from the registry
WHAT_TYPE = "What type of object is in this photo?"
SELECT = "Select the most appropriate label for the object shown in the image."
IDENTIFY = "Identify the object in this image."
LETTER = "Answer with the option's letter from the given choices directly."


@pytest.fixture(scope="module")
def llava(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return vlm_fixtures.make_llava(tmp_path_factory.mktemp("llava") / "m")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_classification(tmp_path_factory.mktemp("ds") / "ds", n=2, k=3)


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, list[str] | None]]]:
    """Every call the model gets: (the prompt's text, the continuations scored or
    None). The spy records and calls the real primitive."""
    calls: list[tuple[str, list[str] | None]] = []

    def spy(name: str, with_answers: bool) -> None:
        real = getattr(HfBackend, name)

        def observed(self: HfBackend, prompts: Any, *args: Any) -> Any:
            for i, p in enumerate(prompts):
                calls.append((p.text, list(args[0][i]) if with_answers else None))
            return real(self, prompts, *args)

        monkeypatch.setattr(HfBackend, name, observed)

    spy("continuation_logprobs", True)
    spy("next_token_logprobs", False)
    spy("generate", False)
    yield calls


def _predict(llava: Path, dataset: Path, out: Path, *args: str) -> int:
    return main(["predict", "--model", f"vlm:{llava}", "--dataset", str(dataset), "--out",
                 str(out), "--device", "cpu", "--threads", "1", "--no-progress", *args])


def _names(row: dict[str, Any]) -> list[str]:
    return [NAMES[c] for c in (row["candidates"] or range(len(NAMES)))]


def _expected(mode: str, row: dict[str, Any]) -> dict[str, tuple[str, list[str] | None]]:
    """What each prompt id must send for ``row`` in ``mode`` (closed world: fixed order)."""
    names = _names(row)
    lettered = "\n".join(f"{chr(65 + i)}. {n}" for i, n in enumerate(names))
    if mode.startswith("likelihood"):
        return {"what-type": (WHAT_TYPE, names), "select-label": (SELECT, names),
                "identify": (IDENTIFY, names),
                "photo-of": (WHAT_TYPE, [f"A photo of a {n}" for n in names])}
    if mode == "letter":
        return {"what-type": (f"{WHAT_TYPE}\n{lettered}\n{LETTER}", None),
                "select-label": (f"{SELECT}\n{lettered}\n{LETTER}", None),
                "photo-of": (f"{WHAT_TYPE}\n"
                             + "\n".join(f"{chr(65 + i)}. A photo of a {n}"
                                         for i, n in enumerate(names)) + f"\n{LETTER}", None)}
    if mode == "generate":
        listed = f" Choose one from {', '.join(names)}."
        return {"what-type": (WHAT_TYPE + listed, None), "identify": (IDENTIFY + listed, None)}
    return {"what-type": (WHAT_TYPE, None), "identify": (IDENTIFY, None)}


@pytest.mark.parametrize(("mode", "prompt", "config"), [
    ("likelihood:avg", None, None),
    ("likelihood:sum", "photo-of", None),
    ("letter", "select-label", "toy-k3"),
    ("letter", "photo-of", "toy-k3"),
    ("generate", "identify", None),  # with --class-order fixed
    ("open-world", None, "toy-k3"),
])
def test_the_recorded_prompt_id_names_the_text_the_model_was_sent(
        llava: Path, dataset: Path, tmp_path: Path, sent: list[tuple[str, list[str] | None]],
        mode: str, prompt: str | None, config: str | None) -> None:
    out = tmp_path / "p.parquet"
    args = ["--mode", mode, *(["--prompt", prompt] if prompt else []),
            *(["--config", config] if config else []),
            *(["--class-order", "fixed"] if mode == "generate" else [])]
    assert _predict(llava, dataset, out, *args) == 0
    recorded = read_prediction_meta(out)["prompt_id"]
    assert recorded == (prompt or "what-type")
    rows = [r for r in index_rows(dataset) if config is None or r["config"] == config]
    assert len(sent) == len(rows)  # one call per row, in the plan's order
    table = pq.read_table(out).to_pylist()
    entry = LABEL_SPACE_PROMPTS[recorded]
    for (text, answers), row, got in zip(sent, rows, table, strict=True):
        expected = _expected(mode, row)
        assert (text, answers) == expected[recorded]
        # no other registered prompt would have sent this text
        assert [k for k, v in expected.items() if v == (text, answers)] == [recorded]
        # the registry entry the id names renders it, and the audit trail shows it
        assert text.startswith(entry.question)
        if answers is not None:
            assert answers == entry.answers(_names(row))
        assert text in got["prompt_text"]


@pytest.mark.parametrize(("mode", "prompt", "why"), [
    ("likelihood:avg", "mcq-letter", "it asks an MCQ's own question"),
    ("letter", "mcq-letter-short", "it asks an MCQ's own question"),
    ("likelihood:sum", "class-name", "it asks as what-type does"),
    ("generate", "photo-of", "it words only the answers"),
    ("open-world", "photo", "it is not one of them"),
])
def test_a_prompt_that_cannot_ask_over_a_label_space_is_refused(
        llava: Path, dataset: Path, tmp_path: Path, sent: list[tuple[str, list[str] | None]],
        capsys: pytest.CaptureFixture[str], mode: str, prompt: str, why: str) -> None:
    run = tmp_path / "run"
    run.mkdir()
    assert _predict(llava, dataset, run / "p.parquet", "--mode", mode, "--prompt", prompt) != 0
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: --prompt {prompt}: ") and "\n" not in err and why in err
    usable = "what-type (default), select-label, identify, main-object"
    tail = {"generate": ", what-type-cot, identify-cot, main-object-cot, what-type-name-only;",
            "open-world": ", what-type-cot, identify-cot, main-object-cot;",
            # seed 001's LLaVA ImageNet-D prompt letters its classes: --mode letter only
            "letter": ", photo-of, llava-imagenet-d;"}
    assert usable + tail.get(mode, ", photo-of;") in err
    assert list(run.iterdir()) == [] and sent == []


def test_a_loaded_adapter_with_an_mcq_prompt_is_refused_before_the_journal(
        llava: Path, dataset: Path, tmp_path: Path, sent: list[tuple[str, list[str] | None]]
        ) -> None:
    adapter = load_adapter(f"vlm:{llava}", device="cpu", mode="likelihood:avg",
                           prompt="mcq-letter")
    assert isinstance(adapter, VlmAdapter) and adapter.prompt_id == "mcq-letter"  # an MCQ's
    run = tmp_path / "run"
    run.mkdir()
    with pytest.raises(VlmrobustError, match="--prompt mcq-letter: a vlm over a label space"):
        predict_dataset(RunSpec(
            adapter, dataset, run / "p.parquet", progress=False, backend=BackendOptions(threads=1)
        ))
    assert list(run.iterdir()) == [] and sent == []
    # a loaded adapter given no prompt records the label-space default, not its MCQ one
    plain = load_adapter(f"vlm:{llava}", device="cpu", mode="likelihood:avg")
    assert isinstance(plain, VlmAdapter) and plain.prompt_id == "mcq-letter"
    out = predict_dataset(RunSpec(
        plain, dataset, run / "p.parquet", progress=False, configs="toy-k3",
        backend=BackendOptions(threads=1)))
    assert read_prediction_meta(out)["prompt_id"] == "what-type"
    assert {t for t, _ in sent} == {WHAT_TYPE}


def test_the_id_reaches_the_submission_and_the_leaderboard(
        llava: Path, dataset: Path, tmp_path: Path) -> None:
    preds = tmp_path / "p.parquet"
    assert _predict(llava, dataset, preds, "--mode", "likelihood:avg", "--prompt", "identify",
                    "--name", "Tiny LLaVA") == 0
    subs, site = tmp_path / "subs", tmp_path / "site"
    assert main(["submit", "--submissions", str(subs), "--model-id", "tiny-llava", "--dataset",
                 str(dataset), "--predictions", str(preds)]) == 0
    meta = yaml.safe_load((subs / "tiny-llava" / "meta.yaml").read_text())
    assert meta["prompt_id"] == "identify" and meta["prompts"] == {"classification": "identify"}
    assert main(["leaderboard", "build", "--submissions", str(subs), "--out", str(site),
                 "--quiet", "--datasets", str(dataset)]) == 0
    with (site / "classification.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert rows and {r["prompt_id"] for r in rows} == {"identify"}

    from vlmrobust.leaderboard.fits.shifts import line_prompt
    from vlmrobust.leaderboard.load import load_submissions

    loaded = load_submissions(subs)
    assert [line_prompt(s.meta) for s in loaded] == ["identify · likelihood:avg"]


def test_prompts_lists_the_label_space_prompts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prompts"]) == 0
    out = capsys.readouterr().out
    block = out.split("vlm over a label space", 1)[1].split("\n\n", 1)[0]
    listed = [line.split()[0] for line in block.splitlines()[1:]]
    assert listed == list(LABEL_SPACE_PROMPTS) == [
        "what-type", "select-label", "identify", "main-object", "what-type-cot", "identify-cot",
        "main-object-cot", "what-type-name-only", "photo-of", "llava-imagenet-d"]
    assert re.search(rf"what-type +{re.escape(WHAT_TYPE)} \(default\)", block)
    assert "A photo of a {class}; --mode letter and likelihood only" in block
