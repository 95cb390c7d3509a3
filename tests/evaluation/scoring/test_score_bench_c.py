"""The Bench-C block of scores.json as the paper reports it: plain per-cell
means next to κ-weighted ones, clean S/C, destructive and corrective RAS per
cell, and all of it per source category, against an independent loop."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.fixtures.score import (
    bench_c_features,
    bench_c_rows,
    dataset_rows,
    random_logits,
    write_meta,
    write_parquet,
)
from vlmrobust.core.writer import BuildInfo, write_dataset
from vlmrobust.evaluation.scoring.dataset import score

METRICS = ("acc", "delta_acc", "S", "S_clean", "delta_S", "C", "C_clean", "delta_C", "ras",
           "destructive_ras", "corrective_ras")


@pytest.fixture(scope="module")
def two_categories(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rows = bench_c_rows(n_questions=9)
    kappas = [0.2, 0.9, 0.5, 0.0, 0.7, 0.3, 1.0, 0.6, 0.1]
    for r in rows:
        q = int(r["source_id"][1:])
        r["category"] = "ocr" if q % 3 == 0 else "scene"
        r["kappa"] = kappas[q]
    out = tmp_path_factory.mktemp("ds") / "bench-c-cats"
    write_dataset(out, configs={"default": rows}, features=bench_c_features(), card="toy",
                  info=BuildInfo("bench-c", "0.1.0", 0, sample=True))
    return out


def _softmax(z: list[float]) -> list[float]:
    m = max(z)
    e = [math.exp(v - m) for v in z]
    return [v / sum(e) for v in e]


def _stats(logits: list[float], answer: int) -> tuple[float, float, int]:
    p = _softmax(logits)
    s = -sum(x * math.log(x) for x in p if x > 0) / math.log(len(p))
    ok = int(p.index(max(p)) == answer)
    return s, abs(ok - max(p)), ok


def _loop(ds: Path, logits: dict[str, list[float]], category: str | None,
          cut: frozenset[str] = frozenset()
          ) -> tuple[dict[tuple[str, int], dict[str, Any]], dict[str, Any]]:
    """Per cell: plain and κ-weighted means of every metric, plain loops only;
    rows in ``cut`` (letters a server did not list) out of every metric but Acc."""
    from vlmrobust.core.datadir import read_table

    rows = read_table(ds, "default", columns=["id", "answer", "source_id", "corruption",
                                              "severity", "kappa", "category"]).to_pylist()
    if category is not None:
        rows = [r for r in rows if r["category"] == category]
    clean = {r["source_id"]: r for r in rows if r["corruption"] == "none"}
    pairs: dict[tuple[str, int], list[tuple[float, str, dict[str, float]]]] = defaultdict(list)
    for r in rows:
        if r["corruption"] == "none":
            continue
        o = clean[r["source_id"]]
        so, co, oko = _stats(logits[o["id"]], o["answer"])
        sd, cd, okd = _stats(logits[r["id"]], r["answer"])
        ds_, dc = sd - so, cd - co
        ras = -dc - max(dc, 0) * max(-ds_, 0) - max(ds_, 0) * max(-dc, 0)
        trans = ("R" if oko else "W") + ("R" if okd else "W")
        full = r["id"] not in cut and o["id"] not in cut
        pairs[(r["corruption"], r["severity"])].append((r["kappa"], trans, {
            "acc": okd, "delta_acc": okd - oko, **({"S": sd, "S_clean": so, "delta_S": ds_,
            "C": cd, "C_clean": co, "delta_C": dc, "ras": ras} if full else {})}))

    def mean(items: list[tuple[float, float]], weighted: bool) -> float | None:
        if not items:
            return None
        w = [k if weighted else 1.0 for k, _ in items]
        if sum(w) == 0:
            w = [1.0] * len(items)
        return sum(wi * v for wi, (_, v) in zip(w, items, strict=True)) / sum(w)

    cells = {}
    for key, items in pairs.items():
        cell: dict[str, Any] = {"n": len(items), "WR": 0, "RW": 0}
        for _, t, _ in items:
            cell[t] = cell.get(t, 0) + 1
        for weighted in (True, False):
            vals = {}
            for m in METRICS[:9]:
                vals[m] = mean([(k, v[m]) for k, _, v in items if m in v], weighted)
            vals["destructive_ras"] = mean([(k, v["ras"]) for k, t, v in items
                                            if t[0] == "R" and "ras" in v], weighted)
            vals["corrective_ras"] = mean([(k, v["ras"]) for k, t, v in items
                                           if t[0] == "W" and "ras" in v], weighted)
            cell["kappa_weighted" if weighted else "plain"] = vals
        cells[key] = cell
    cq = list(clean.values())
    clean_stats = [(_stats(logits[r["id"]], r["answer"]), r["kappa"]) for r in cq]
    full_stats = [(_stats(logits[r["id"]], r["answer"]), r["kappa"]) for r in cq
                  if r["id"] not in cut]
    summary = {"plain": {"acc": np.mean([s[2] for s, _ in clean_stats]),
                         "S": np.mean([s[0] for s, _ in full_stats]),
                         "C": np.mean([s[1] for s, _ in full_stats])},
               "kappa_weighted": {
                   m: sum(k * s[i] for s, k in part) / sum(k for _, k in part)
                   for i, m, part in ((2, "acc", clean_stats), (0, "S", full_stats),
                                      (1, "C", full_stats))}}
    return cells, summary


def _submit(ds: Path, folder: Path, seed: int) -> tuple[Path, dict[str, list[float]]]:
    rows = dataset_rows(ds)
    logits = random_logits(rows, seed)
    p = write_parquet(folder / "predictions.parquet", [r["id"] for r in rows], logits)
    write_meta(p, ds)
    return p, {r["id"]: x for r, x in zip(rows, logits, strict=True)}


def _check_block(cells: list[dict[str, Any]], aggregate: dict[str, Any],
                 ref: dict[tuple[str, int], dict[str, Any]]) -> None:
    assert len(cells) == len(ref)
    for cell in cells:
        want = ref[(cell["corruption"], cell["severity"])]
        assert cell["n"] == want["n"]
        for m in METRICS:
            for got, exp in ((cell[m], want["kappa_weighted"][m]),
                             (cell["plain"][m], want["plain"][m])):
                if exp is None:
                    assert got is None, m
                else:
                    assert got == pytest.approx(exp, abs=1e-12), (cell["corruption"], m)
        # the paper's Table 3: plain ΔAcc = (WR − RW) / N
        t = cell["transitions"]
        assert cell["plain"]["delta_acc"] == pytest.approx((t["WR"] - t["RW"]) / cell["n"])
        assert (t["WR"], t["RW"]) == (want["WR"], want["RW"])
    for m in METRICS:
        for label, got in (("kappa_weighted", aggregate[m]), ("plain", aggregate["plain"][m])):
            vals = [c[label][m] for c in ref.values() if c[label][m] is not None]
            if not vals:  # e.g. no question of a category was wrong when clean
                assert got is None, (label, m)
            else:
                assert got == pytest.approx(np.mean(vals), abs=1e-12), (label, m)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_plain_and_weighted_cells_match_a_direct_loop(two_categories: Path, tmp_path: Path,
                                                      seed: int) -> None:
    p, logits = _submit(two_categories, tmp_path / "sub", seed)
    bc = score(two_categories, p, tmp_path / "s.json")["datasets"]["bench-c"]["bench_c"]
    ref, clean = _loop(two_categories, logits, None)
    _check_block(bc["cells"], bc["aggregate"], ref)
    for label in ("plain", "kappa_weighted"):
        for m in ("acc", "S", "C"):
            assert bc["clean"][label][m] == pytest.approx(clean[label][m], abs=1e-12), (label, m)
    assert bc["clean_accuracy"] == bc["clean"]["kappa_weighted"]["acc"]
    assert "plain" in bc["note"] and "κ-weighted" in bc["note"]
    assert sorted(bc["categories"]) == ["ocr", "scene"]
    for cat, block in bc["categories"].items():
        ref_c, clean_c = _loop(two_categories, logits, cat)
        _check_block(block["cells"], block["aggregate"], ref_c)
        assert block["clean"]["n_questions"] == (3 if cat == "ocr" else 6)
        assert block["clean"]["plain"]["C"] == pytest.approx(clean_c["plain"]["C"], abs=1e-12)


def test_plain_and_weighted_differ_when_kappa_does(two_categories: Path, tmp_path: Path) -> None:
    p, _ = _submit(two_categories, tmp_path / "sub", 3)
    bc = score(two_categories, p, tmp_path / "s.json")["datasets"]["bench-c"]["bench_c"]
    assert any(c["ras"] != pytest.approx(c["plain"]["ras"]) for c in bc["cells"])


def test_truncated_rows_leave_s_c_and_ras_but_keep_accuracy(two_categories: Path,
                                                            tmp_path: Path) -> None:
    """Rows whose letters a server did not all list (issue 36.3): their pairs
    are out of S, C, RAS and the quadrants (a placeholder is no probability) and
    in Acc / ΔAcc (a listed letter outranks every unlisted one)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from vlmrobust.core.datadir import read_table

    rows = dataset_rows(two_categories)
    logits = random_logits(rows, 5)
    table = read_table(two_categories, "default", columns=["id", "source_id", "corruption"])
    info = {r["id"]: r for r in table.to_pylist()}
    clean_ids = [i for i, r in info.items() if r["corruption"] == "none"]
    corrupted_ids = [i for i, r in info.items() if r["corruption"] != "none"]
    cut = frozenset([clean_ids[1], *corrupted_ids[::4]])
    cut_source = info[clean_ids[1]]["source_id"]
    p = tmp_path / "sub" / "predictions.parquet"
    p.parent.mkdir()
    pq.write_table(pa.table({"id": [r["id"] for r in rows], "logits": logits,
                             "truncated": [1 if r["id"] in cut else None for r in rows]}), p)
    write_meta(p, two_categories)
    bc = score(two_categories, p, tmp_path / "s.json")["datasets"]["bench-c"]["bench_c"]
    by_id = {r["id"]: x for r, x in zip(rows, logits, strict=True)}
    ref, clean = _loop(two_categories, by_id, None, cut)
    _check_block(bc["cells"], bc["aggregate"], ref)
    for label in ("plain", "kappa_weighted"):
        for m in ("acc", "S", "C"):
            assert bc["clean"][label][m] == pytest.approx(clean[label][m], abs=1e-12), (label, m)
    n_cut = sum(1 for i in corrupted_ids if i in cut or info[i]["source_id"] == cut_source)
    assert bc["truncated_excluded"] == {"pairs_probability": n_cut, "pairs_accuracy": 0}
    untouched, _ = _loop(two_categories, by_id, None)
    assert any(c["ras"] != pytest.approx(untouched[(c["corruption"], c["severity"])]
                                         ["kappa_weighted"]["ras"], abs=1e-12)
               for c in bc["cells"] if c["ras"] is not None)
