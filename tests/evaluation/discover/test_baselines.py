"""The baselines that need no training: zero-shot prompting and ConMe-style
two-turn prompting, through a real backend (tiny random LLaVA in process), judged
by the same verifier and compared by the same metrics."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.fixtures.discover import planted_folder
from tests.fixtures.vlm import make_llava
from vlmrobust.cli.main import main
from vlmrobust.evaluation.discover.prompts import CONME_DESCRIBE, conme_ask_prompt
from vlmrobust.evaluation.discover.questioner import BackendGenerator, Questioner
from vlmrobust.models.backends.base import GenerationConfig, Prompt


class Spy:
    """The real backend, with the prompts it was given kept (not a fake)."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.name = backend.name
        self.seen: list[Prompt] = []

    def generate(self, prompts: list[Prompt], config: GenerationConfig) -> list[str]:
        self.seen += prompts
        return list(self.backend.generate(prompts, config))


@pytest.fixture(scope="module")
def llava(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return make_llava(tmp_path_factory.mktemp("llava") / "m")


def test_conme_asks_about_its_own_description(llava, tmp_path) -> None:
    from vlmrobust.evaluation.discover.images import list_images
    from vlmrobust.models.backends.hf import load_hf

    spy = Spy(load_hf(str(llava), {"device": "cpu"}))
    images = [r.load()[0] for r in list_images(planted_folder(tmp_path, n=3))]
    q = Questioner(BackendGenerator(spy, max_new_tokens=8), k=2, strategy="conme")  # type: ignore[arg-type]
    completions = q.complete(images, [0, 1, 2])
    first, second = spy.seen[:3], spy.seen[3:]
    assert [p.text for p in first] == [CONME_DESCRIBE] * 3
    descriptions = spy.backend.generate(first, GenerationConfig(max_new_tokens=8))
    assert [p.text for p in second] == [conme_ask_prompt(2, d) for d in descriptions]
    assert all(p.image is im for p, im in zip(second, images, strict=True))
    assert completions == spy.backend.generate(second, GenerationConfig(max_new_tokens=8))
    zero = Spy(spy.backend)
    Questioner(BackendGenerator(zero, 8), k=2).complete(images, [0, 1, 2])  # type: ignore[arg-type]
    assert len(zero.seen) == 3 and "<response_i>" in zero.seen[0].text


def test_both_baselines_are_judged_and_compared(llava, tmp_path) -> None:
    images = planted_folder(tmp_path, n=2)
    outs = []
    for strategy in ("zero-shot", "conme"):
        out = tmp_path / f"{strategy}.jsonl"
        assert main(["discover", "sample", "--questioner", f"vlm:{llava}", "--strategy",
                     strategy, "--images", str(images), "--answerer", "rule:blind=count",
                     "--verifier", "rule:planted", "--out", str(out), "--max-new-tokens", "8",
                     "--device", "cpu"]) == 0
        outs.append(str(out))
    metrics = tmp_path / "m.json"
    assert main(["discover", "evaluate", *outs, "--out", str(metrics), "--no-sd"]) == 0
    rows = json.loads(metrics.read_text())["rows"]
    assert [r["method"] for r in rows] == ["conme", "zero-shot"]
    # a random model writes no <response_i> tags: every slot is missing, hence invalid
    assert all(r["n_questions"] == 4 and r["qvr"] == 0.0 and r["fdr"] is None for r in rows)
