"""Scoring a text-only (generate) submission of Bench-C size: every one of
81,504 rows goes through the answer matcher (vlmrobust.core.text.matcher) with the
WordNet synonyms of its ImageNet option classes, and the per-row results are
built. Prints rows per second; the first pass includes the pattern caches'
warm-up.

Run: python -m pytest tests/perf/test_matcher_speed.py --benchmark-only -s
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pyarrow as pa

from vlmrobust.core.classes import load_imagenet_classes
from vlmrobust.core.text.matcher import class_synonyms, match_option
from vlmrobust.evaluation.predictions.read import predictions_from_table
from vlmrobust.evaluation.scoring.dataset import row_results, score_report
from vlmrobust.evaluation.validate.check import validate_against
from vlmrobust.evaluation.validate.dataset_index import DatasetIndex

N_ROWS = 849 * 96
K = 4


def _tables() -> tuple[pa.Table, pa.Table]:
    rng = np.random.default_rng(0)
    classes = load_imagenet_classes()
    ids, options, class_ids, answers, texts = [], [], [], [], []
    for i in range(N_ROWS):
        picked = rng.choice(1000, size=K, replace=False).tolist()
        names = [classes[c].name for c in picked]
        right = i % K
        kind = i % 4
        if kind == 0:
            text = f"The answer is ({'ABCD'[right]})."
        elif kind == 1:
            text = f"This photo shows a {names[right]} on a table."
        elif kind == 2:
            lemma = class_synonyms(picked[right])[-1]
            text = "<think>" + f"Is it a {names[0]} or a {names[1]}? " * 10 + f"</think>It is a {lemma}."
        else:
            text = "I cannot tell what this is."
        ids.append(f"r{i}")
        options.append(names)
        class_ids.append(picked)
        answers.append(right)
        texts.append(text)
    dataset = pa.table({"id": ids, "options": options, "option_class_ids": class_ids,
                        "answer": pa.array(answers, pa.int32())})
    return dataset, pa.table({"id": ids, "text": texts})


MANIFEST = {"spec": {"name": "bench-c", "version": "perf"}, "configs": {"default": N_ROWS},
            "fingerprint": "perf", "sample": False}


def test_text_only_scoring_speed(benchmark: Any) -> None:
    dataset, preds = _tables()
    index = DatasetIndex.from_table(dataset, MANIFEST)
    pf = predictions_from_table(preds)

    def run() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        report = validate_against(index, pf)
        return score_report(report), row_results(report)

    t0 = time.perf_counter()
    scores, rows = run()
    first = time.perf_counter() - t0
    benchmark.pedantic(run, rounds=2, iterations=1)
    warm = benchmark.stats.stats.min
    print(f"\ntext-only scoring of {N_ROWS} rows: first pass {first:.2f} s "
          f"({N_ROWS / first:,.0f} rows/s), warm {warm:.2f} s ({N_ROWS / warm:,.0f} rows/s)")
    section = scores["datasets"]["bench-c"]
    # a quarter of the rows say nothing; the rest are right by construction
    assert section["no_answer"] == N_ROWS // 4
    assert section["configs"]["default"]["accuracy"] == 0.75
    sample = np.random.default_rng(1).choice(N_ROWS, size=200, replace=False).tolist()
    opts = dataset.column("options").to_pylist()
    cids = dataset.column("option_class_ids").to_pylist()
    texts = preds.column("text").to_pylist()
    for i in sample:
        want = match_option(texts[i], opts[i], [class_synonyms(c) for c in cids[i]])
        assert rows[i]["predicted"] == want
