"""A tiny classification dataset directory (kind ``classification``, issue 23)
for the validate / predict / score / leaderboard tests of every lane.

Stable API (other tests import it):

- ``FIXTURE_CLASSES``: the ImageNet-1k indices of the toy label space's classes.
- ``toy_label_space(ids=FIXTURE_CLASSES, name="toy")``: a LabelSpace with each
  class's clean name, synonyms (its WordNet lemmas, as the builder), wnid and imagenet_ids.
- ``classification_features()``: id, image, label, candidates, variant.
- ``write_classification(out, n=10, k=3, seed=0)``: configs ``toy`` (the whole
  label space; ``candidates`` empty) and, when ``k``, ``toy-k<k>`` (a K-config:
  ``k`` candidate classes per row, containing the label). Returns ``out``.
- ``index_rows(dataset_dir)``: per row, in dataset order: id, config, label,
  candidates, k (how many logits a prediction gives), answer (the option index a
  prediction must pick: label, or its position among the candidates).
- ``random_logits(rows, seed)`` / ``perfect_logits(rows)``: one list per row, of
  length ``k``.

Write the predictions themselves with tests.score_fixtures' write_parquet /
write_jsonl / write_meta.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datasets
import numpy as np

from tests.score_fixtures import png
from vlmrobust.core.classes import load_imagenet_classes
from vlmrobust.core.kinds import CLASSIFICATION
from vlmrobust.core.label_space import ClassEntry, LabelSpace
from vlmrobust.core.writer import BuildInfo, write_dataset

# tench, goldfish, great white shark, golden retriever, tabby cat, school bus
FIXTURE_CLASSES = (0, 1, 2, 207, 281, 779)


def toy_label_space(ids: tuple[int, ...] = FIXTURE_CLASSES, name: str = "toy") -> LabelSpace:
    classes = load_imagenet_classes()
    entries = []
    for i in ids:
        c = classes[i]
        syn = tuple(dict.fromkeys(s for s in c.lemmas if s.strip() and s != c.name))
        entries.append(ClassEntry(c.name, syn, c.wnid, (i,)))
    return LabelSpace(name, tuple(entries))


def classification_features() -> datasets.Features:
    return datasets.Features({
        "id": datasets.Value("string"), "image": datasets.Image(), "label": datasets.Value("int32"),
        "candidates": datasets.Sequence(datasets.Value("int32")), "variant": datasets.Value("string"),
    })


def _candidates(label: int, n_classes: int, k: int, rng: np.random.Generator) -> list[int]:
    others = [c for c in range(n_classes) if c != label]
    shown = [label, *rng.choice(others, size=k - 1, replace=False).tolist()]
    return [int(c) for c in rng.permutation(shown)]


def write_classification(out: Path, n: int = 10, k: int | None = 3, seed: int = 0,
                         space: LabelSpace | None = None) -> Path:
    space = space or toy_label_space()
    rng = np.random.default_rng(seed)

    def rows(config: str, k_: int | None) -> list[dict[str, Any]]:
        return [{"id": f"{config}-{i:03d}", "image": {"bytes": png(seed * 1000 + i), "path": None},
                 "label": i % len(space),
                 "candidates": _candidates(i % len(space), len(space), k_, rng) if k_ else [],
                 "variant": "toy"} for i in range(n)]

    configs = {"toy": rows("toy", None)}
    if k:
        configs[f"toy-k{k}"] = rows(f"toy-k{k}", k)
    write_dataset(out, configs=configs, features=classification_features(), card="toy classification",
                  info=BuildInfo("classification", "0.1.0", seed, sample=True), kind=CLASSIFICATION,
                  label_spaces=dict.fromkeys(configs, space))
    return out


def index_rows(dataset_dir: Path) -> list[dict[str, Any]]:
    from vlmrobust.core.datadir import config_names, read_table
    from vlmrobust.core.label_space import read_label_space

    out: list[dict[str, Any]] = []
    for config in config_names(dataset_dir):
        n_classes = len(read_label_space(dataset_dir, config))
        for r in read_table(dataset_dir, config, columns=["id", "label", "candidates"]).to_pylist():
            cands = list(r["candidates"] or [])
            out.append({"id": r["id"], "config": config, "label": r["label"], "candidates": cands,
                        "k": len(cands) or n_classes,
                        "answer": cands.index(r["label"]) if cands else r["label"]})
    return out


def random_logits(rows: list[dict[str, Any]], seed: int = 0) -> list[list[float]]:
    rng = np.random.default_rng(seed)
    return [rng.normal(size=r["k"]).round(4).tolist() for r in rows]


def perfect_logits(rows: list[dict[str, Any]]) -> list[list[float]]:
    return [[5.0 if j == r["answer"] else 0.0 for j in range(r["k"])] for r in rows]
