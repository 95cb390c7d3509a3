"""The seeds' own numbers where the specs and cards carry them (issue 22.8, 22.9,
22.13): seed 003's five corruption categories and its pool of about 200
candidates per task type (~4,000 in all); seed 002's caps of 3 images per
question and 3 occurrences of a question; and the relation seed 003's Table 1
shows in every row, RAS ≤ −ΔC, which our product form implies for every cell
and aggregate the scorer reports."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from tests.fixtures.score import bench_c_features, bench_c_rows, dataset_rows
from vlmrobust.benchmarks import load_spec_yaml, resolve_spec
from vlmrobust.builders.corruptions.registry import ALL_CORRUPTIONS, GROUP_OF, GROUPS
from vlmrobust.core.writer import BuildInfo, write_dataset


def test_corruptions_fall_in_the_papers_five_categories() -> None:
    assert list(GROUPS) == ["noise", "blur", "weather", "photometric", "digital"]
    assert GROUPS["photometric"] == ("brightness", "contrast", "saturate")
    assert GROUPS["digital"] == ("jpeg_compression", "pixelate", "elastic_transform")
    assert len(ALL_CORRUPTIONS) == len(set(ALL_CORRUPTIONS)) == 19
    assert set(GROUP_OF) == set(ALL_CORRUPTIONS)


def test_bench_c_spec_carries_the_papers_pool() -> None:
    from vlmrobust.builders.bench_c.spec import parse_spec

    path = resolve_spec("bench-c")
    sel = parse_spec(load_spec_yaml(path), path).selection
    assert (sel.pool_per_category, sel.pool_size, sel.pool_per_source) == (200, 4000, None)
    assert round(849 / sel.pool_size, 3) == 0.212  # "849 kept ≈ 21.2% of the pool"


def test_pool_cap_is_balanced_over_task_types() -> None:
    from vlmrobust.builders.bench_c.pool import balanced_pool
    from vlmrobust.builders.bench_c.sources import Candidate

    sizes = {("a", "x"): 500, ("a", "y"): 30, ("b", "x"): 300, ("b", "z"): 250}
    cands = [Candidate(src, f"{cat}{i}", cat, "q", ("o", "p"), 0, b"")
             for (src, cat), n in sizes.items() for i in range(n)]
    pool = balanced_pool(cands, 200, seed=1, limit=500)
    got: dict[tuple[str, str], int] = {}
    for c in pool:
        got[(c.source, c.category)] = got.get((c.source, c.category), 0) + 1
    # 500 places over 4 task types: the small one whole, the rest evenly
    assert got == {("a", "x"): 157, ("a", "y"): 30, ("b", "x"): 157, ("b", "z"): 156}


def test_imagewikiqa_spec_and_card_carry_the_seeds_caps() -> None:
    from vlmrobust.builders.imagewikiqa.card import _caps_note
    from vlmrobust.builders.imagewikiqa.spec import parse_spec

    path = resolve_spec("imagewikiqa")
    spec = parse_spec(load_spec_yaml(path), path)
    assert (spec.images_per_question, spec.question_repeat_cap) == (3, 3)
    assert "seed's caps" in _caps_note(spec) and "Deviation" not in _caps_note(spec)
    other = replace(spec, images_per_question=5, question_repeat_cap=4)
    note = _caps_note(other)
    assert "Deviation from the seed" in note and "uses 5 and 4" in note
    assert "(the seed used 10)" not in path.read_text()


@pytest.fixture(scope="module")
def bench_c_scores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A Bench-C scored with random logits: many cells of every sign."""
    import vlmrobust
    from vlmrobust.evaluation.scoring.dataset import score

    tmp = tmp_path_factory.mktemp("t1")
    rows = bench_c_rows(n_questions=24)
    for r in rows:
        r["category"] = "ocr" if int(r["source_id"][1:]) % 2 else "scene"
    ds = tmp / "bench-c"
    write_dataset(ds, configs={"default": rows}, features=bench_c_features(), card="t",
                  info=BuildInfo("bench-c", "0.1.0", 0, sample=True))
    got = dataset_rows(ds)
    rng = np.random.default_rng(5)
    logits = [(rng.normal(size=r["k"]) * rng.uniform(0.2, 4)).tolist() for r in got]
    pred = vlmrobust.write_predictions(ds, [r["id"] for r in got], logits, model="m",
                                       family="other", out=tmp / "p.parquet")
    block: dict[str, Any] = score(ds, pred, tmp / "s.json")["datasets"]["bench-c"]["bench_c"]
    return block


def _blocks(block: dict[str, Any]) -> list[dict[str, Any]]:
    out = [*block["cells"], block["aggregate"]]
    for cat in block["categories"].values():
        out += [*cat["cells"], cat["aggregate"]]
    return out


def test_table_1_relation_ras_at_most_minus_delta_c(bench_c_scores: dict[str, Any]) -> None:
    blocks = _blocks(bench_c_scores)
    strict = 0
    for b in blocks:
        for part in (b, b["plain"]):
            assert part["ras"] <= -part["delta_C"] + 1e-12
            strict += part["ras"] < -part["delta_C"] - 1e-9
    assert strict > 0  # the penalty terms are not all zero: the check has teeth


def test_table_3_relation_delta_acc_from_transition_counts(
        bench_c_scores: dict[str, Any]) -> None:
    cells = bench_c_scores["cells"]
    for c in cells:
        t = c["transitions"]
        assert sum(t.values()) == c["n"]
        assert c["plain"]["delta_acc"] == pytest.approx((t["WR"] - t["RW"]) / c["n"], abs=1e-12)
    # every cell holds every question (as each of the paper's 95 cells holds its 849)
    n = cells[0]["n"]
    agg = bench_c_scores["aggregate"]
    wr, rw = agg["transitions"]["WR"], agg["transitions"]["RW"]
    assert agg["plain"]["delta_acc"] == pytest.approx((wr - rw) / (n * len(cells)), abs=1e-12)
