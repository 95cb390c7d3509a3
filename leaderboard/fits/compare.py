"""Two models on one dataset, from their configs of the details dataset
(leaderboard/site/details.py; issue 37 item 1, `vlmrobust compare`): where their
answers disagree, and the paired tests the leaderboard's overview uses
(:mod:`vlmrobust.leaderboard.fits.pairwise`) on the rows both answered:

- a Bench-C dataset (rows with ``source_id`` and ``corruption``): the κ-weighted
  Acc, ΔAcc and RAS differences, bootstrapped over shared source questions with
  all their copies (:func:`pairwise.bench_c_test`);
- any other dataset with per-row ``correct``: McNemar's exact test with a paired
  bootstrap interval of the accuracy difference (:func:`pairwise.accuracy_test`),
  over all configs and per config.

The difference is always model A − model B. The overview's ER test needs the
reference line, which the details do not carry: compare the ER columns on the site.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.scoring.bench_c.stats import pairing_for
from vlmrobust.evaluation.validate.dataset_index import FAMILY_COLUMNS, DatasetIndex
from vlmrobust.leaderboard.fits.pairwise import (
    BENCH_C_COLUMNS,
    PairTest,
    accuracy_test,
    bench_c_test,
)
from vlmrobust.leaderboard.trust.evidence import DatasetEvidence

MAX_CARD_BYTES = 64 * 2**20
COLUMNS = ("id", "config", "answer", "predicted", "correct", "ras", *FAMILY_COLUMNS)
SHOWN_IDS = 5


class CompareError(VlmrobustError):
    """The two details configs cannot be compared."""


def _local_config_files(root: Path, config: str) -> list[Path]:
    """The parquet files of ``config`` as the card's YAML header lists them."""
    import yaml

    from vlmrobust.core.files.bounded import read_bytes_bounded

    text = read_bytes_bounded(root / "README.md", MAX_CARD_BYTES, "details card",
                              CompareError).decode("utf-8", "replace")
    parts = text.split("---", 2)
    header = yaml.safe_load(parts[1]) if text.startswith("---") and len(parts) == 3 else None
    entries = header.get("configs") if isinstance(header, dict) else None
    if not isinstance(entries, list):
        raise CompareError(f"{root}/README.md lists no configs; pass the details folder "
                           "`leaderboard publish` wrote (--details)")
    names = [e.get("config_name") for e in entries if isinstance(e, dict)]
    if config not in names:
        import difflib

        close = difflib.get_close_matches(config, [str(n) for n in names], n=1)
        raise CompareError(f"{root}: no details config {config!r}"
                           + (f"; did you mean {close[0]!r}?" if close else "")
                           + f" ({len(names)} configs: <model>--<dataset>)")
    entry = entries[names.index(config)]
    files = sorted(p for f in entry.get("data_files") or [] if isinstance(f, dict)
                   for p in root.glob(str(f.get("path", ""))) if p.is_file())
    if not files or any(not p.resolve().is_relative_to(root.resolve()) for p in files):
        raise CompareError(f"{root}: config {config!r} has no data files inside the folder; "
                           "publish the details again")
    return files


def read_details(source: str | Path, config: str) -> Any:
    """One details config as an Arrow table (the columns a comparison reads):
    from a local details folder, else from the hub dataset ``source``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = Path(source)
    if root.is_dir():
        tables = []
        for f in _local_config_files(root, config):
            names = pq.ParquetFile(f).schema_arrow.names
            tables.append(pq.read_table(f, columns=[c for c in COLUMNS if c in names]))
        return pa.concat_tables(tables, promote_options="default")
    import datasets  # a hub dataset: needs the network (or its cached copy)

    ds = datasets.load_dataset(str(source), config, split="test")
    return ds.select_columns([c for c in COLUMNS if c in ds.column_names]).data.table


def evidence_from_details(table: Any, model: str, where: str) -> DatasetEvidence:
    """What the paired tests read (index, per-row correctness, per-pair RAS),
    rebuilt from a details config."""
    cols = set(table.column_names)
    if not {"id", "config", "correct"} <= cols:
        raise CompareError(f"{where}: rows without `correct` (a retrieval config?) cannot be "
                           "compared; compare accuracy-scored datasets")
    n = table.num_rows
    get = {c: table.column(c).to_pylist() for c in COLUMNS if c in cols}
    answer = np.array([-1 if a is None else a for a in get.get("answer", [None] * n)], np.int64)
    index = DatasetIndex(
        manifest={}, configs=tuple(dict.fromkeys(get["config"])),
        ids=np.array(get["id"], dtype=object), config=np.array(get["config"], dtype=object),
        n_options=np.zeros(n, np.int64), answer=answer,
        columns={c: np.array(get[c], dtype=object if c != "kappa" else np.float64)
                 for c in FAMILY_COLUMNS if c in get})
    correct = np.array(get["correct"], dtype=bool)
    ras = None
    if _is_bench_c(index) and "ras" in get:
        pair_ras = np.array([get["ras"][i] for i in pairing_for(index).d_rows.tolist()],
                            dtype=object)
        if all(v is not None for v in pair_ras):
            ras = pair_ras.astype(np.float64)
    digest = hashlib.sha256(f"{where}\0{n}".encode()).hexdigest()
    return DatasetEvidence(digest, digest, model, None, None, {}, index=index, correct=correct,
                           ras=ras)


def _is_bench_c(index: DatasetIndex) -> bool:
    return {"source_id", "corruption"} <= set(index.columns)


@dataclass(frozen=True)
class Comparison:
    """Where two models' rows disagree, and the paired tests."""

    model_a: str
    model_b: str
    dataset: str
    n_shared: int
    both_right: int
    both_wrong: int
    only_a: tuple[str, ...]   # ids A answered right and B wrong
    only_b: tuple[str, ...]
    answers_differ: tuple[str, ...]  # ids whose predicted option differs
    tests: tuple[PairTest, ...]

    def __post_init__(self) -> None:
        if self.n_shared < 0 or self.both_right + self.both_wrong + len(self.only_a) + len(
                self.only_b) != self.n_shared:
            raise ValueError("the four (A right?, B right?) counts must add up to n_shared")

    def lines(self) -> list[str]:
        a, b = self.model_a, self.model_b

        def ids(xs: tuple[str, ...]) -> str:
            more = f" (+{len(xs) - SHOWN_IDS} more)" if len(xs) > SHOWN_IDS else ""
            return ", ".join(xs[:SHOWN_IDS]) + more if xs else "none"

        out = [f"{a} vs {b} on {self.dataset}: {self.n_shared} shared rows; both right "
               f"{self.both_right}, both wrong {self.both_wrong}, only {a} right "
               f"{len(self.only_a)}, only {b} right {len(self.only_b)}; different answers "
               f"{len(self.answers_differ)}",
               f"  only {a} right: {ids(self.only_a)}",
               f"  only {b} right: {ids(self.only_b)}",
               f"  different answers: {ids(self.answers_differ)}",
               f"paired tests ({a} − {b}; the leaderboard's, p < 0.05 significant):"]
        out += [f"  {t.column}: {t.summary()}" for t in self.tests]
        return out


def compare(a: DatasetEvidence, b: DatasetEvidence, pred_a: list[Any], pred_b: list[Any],
            dataset: str) -> Comparison:
    """Compare two models' evidence on ``dataset`` (rows matched by id)."""
    pos_b = {rid: i for i, rid in enumerate(b.index.ids.tolist())}
    pairs = [(i, pos_b[rid]) for i, rid in enumerate(a.index.ids.tolist()) if rid in pos_b]
    if not pairs:
        raise CompareError(f"{a.model} and {b.model} share no row of {dataset}: they answer "
                           "different dataset builds; compare models scored on one build")
    assert a.correct is not None and b.correct is not None
    ia = np.array([p[0] for p in pairs], np.int64)
    ib = np.array([p[1] for p in pairs], np.int64)
    ca, cb = a.correct[ia], b.correct[ib]
    rid = a.index.ids[ia]
    differ = tuple(str(r) for r, x, y in zip(rid.tolist(), [pred_a[i] for i in ia.tolist()],
                                               [pred_b[i] for i in ib.tolist()], strict=True)
                   if x != y)
    tests: list[PairTest] = []
    if _is_bench_c(a.index) and _is_bench_c(b.index):
        tests += [bench_c_test(m, a.model, b.model, a, b) for m in BENCH_C_COLUMNS]
    else:
        configs = list(a.index.configs)
        tests.append(accuracy_test(f"{dataset}:all configs", a.model, b.model, a, b, configs))
        if len(configs) > 1:
            tests += [accuracy_test(f"{dataset}:{c}", a.model, b.model, a, b, [c])
                      for c in configs]
    return Comparison(a.model, b.model, dataset, len(pairs), int((ca & cb).sum()),
                      int((~ca & ~cb).sum()), tuple(str(x) for x in rid[ca & ~cb].tolist()),
                      tuple(str(x) for x in rid[~ca & cb].tolist()), differ, tuple(tests))


def compare_details(source: str | Path, model_a: str, model_b: str, dataset: str) -> Comparison:
    """Read both models' configs of ``dataset`` from the details ``source`` and compare."""
    from vlmrobust.leaderboard.site.details import details_config

    if model_a == model_b:
        raise CompareError(f"both models are {model_a!r}; name two different models")
    evidence, predicted = [], []
    for model in (model_a, model_b):
        config = details_config(model, dataset)
        table = read_details(source, config)
        evidence.append(evidence_from_details(table, model, f"{source} config {config}"))
        predicted.append(table.column("predicted").to_pylist() if "predicted"
                         in table.column_names else [None] * table.num_rows)
    return compare(evidence[0], evidence[1], predicted[0], predicted[1], dataset)
