"""Seed 003's printed tables as tests (issue 34.3): rows pasted from
../shared/seeds/003_bc3fcb96b520d1ac.txt, each checked at the precision it is
printed to (3 decimals: ±0.0005 per printed number; Table 2's p to 3
significant digits, from a t printed to 3 decimals).

- Table 1: per-model means of ΔS, ΔC and RAS. Means of per-question values
  only bound a non-linear formula, so the rows test which readings of Eq. 10
  they admit: the product form (RAS ≤ −ΔC, penalties ≥ 0) fits 13/13 rows; the
  printed text read literally (RAS = −2ΔC − ΔS, linear, so it holds for means
  exactly) and the sum of positive parts (E[RAS] ≤ −E ΔC − |E ΔC| − |E ΔS| by
  Jensen) fit 0/13. Means cannot tell products from minima
  (min([ΔC]₊, [−ΔS]₊) ≥ [ΔC]₊·[−ΔS]₊ also keeps RAS ≤ −ΔC), so the min form is
  refused by Eq. 10's product reading on exact values (DESIGN.md) instead.
- Table 2: p = P(T₁₈ ≥ t) (one-sided, 19 corruption types) in 13/13 rows; the
  two-sided p (twice that) in none.
- Table 3: ΔAcc = (WR − RW)/849 in 28/28 rows, every row's category is the
  quadrant of its mean ΔS and ΔC (a printed 0.000 admits either sign), the
  counts the text gives (9 overconfident, 11 degraded, 3 hesitant, 5 stable),
  and the scorer's gain list keeps exactly these cells at ℓ = 1.
"""

from __future__ import annotations

import numpy as np
import pytest

from vlmrobust.evaluation.scoring.bench_c.stats import accuracy_gain
from vlmrobust.metrics.bench_c.ras import delta_accuracy, quadrant, ras
from vlmrobust.metrics.bench_c.sensitivity import one_sided_p

HALF = 0.0005  # half a unit in the 3rd decimal
N_TABLE_3 = 849  # the questions of Bench-C (each cell holds them all)

# Table 1: model, ΔAcc, RAS, ΔS, ΔC
TABLE_1 = [
    ("Emu3-Chat", -0.041, -0.059, +0.017, +0.037),
    ("Monkey-Chat", -0.052, -0.076, +0.035, +0.050),
    ("Gemma3", -0.061, -0.077, +0.011, +0.056),
    ("Falcon2-VLM", -0.040, -0.067, +0.027, +0.045),
    ("Eagle-X5", -0.069, -0.085, +0.030, +0.056),
    ("mPLUG-Owl3", -0.049, -0.059, +0.035, +0.036),
    ("Idefics3-Llama3", -0.094, -0.110, +0.029, +0.088),
    ("Molmo", -0.072, -0.088, +0.033, +0.067),
    ("SAIL-VL-1.6", -0.063, -0.082, +0.012, +0.060),
    ("DeepSeek-VL2-Small", -0.089, -0.093, +0.066, +0.074),
    ("Phi-4-Multimodal-Instruct", -0.098, -0.109, +0.055, +0.088),
    ("Kimi-VL-A3B-Instruct", -0.096, -0.105, +0.062, +0.085),
    ("Qwen2.5-VL-Instruct", -0.115, -0.129, +0.071, +0.109),
]

# Table 2: model, E[|z_RAS|], E[|z_ΔAcc|], t, p (as printed)
TABLE_2 = [
    ("Eagle-X5", 0.558, 0.381, 51.215, "2.95e-21"),
    ("Emu3-Chat", 0.555, 0.303, 61.158, "1.23e-22"),
    ("Falcon2-VLM", 0.590, 0.379, 36.708, "1.12e-18"),
    ("Gemma3", 0.519, 0.388, 70.743, "9.06e-24"),
    ("Idefics3-Llama3", 0.555, 0.444, 50.858, "3.35e-21"),
    ("Kimi-VL-A3B-Instruct", 0.549, 0.408, 35.468, "2.07e-18"),
    ("Molmo", 0.523, 0.383, 49.864, "4.76e-21"),
    ("Phi-4-Multimodal-Instruct", 0.550, 0.414, 39.183, "3.51e-19"),
    ("Qwen2.5-VL-Instruct", 0.576, 0.442, 38.953, "3.90e-19"),
    ("SAIL-VL-1.6", 0.564, 0.391, 37.117, "9.21e-19"),
    ("DeepSeek-VL2-Small", 0.544, 0.390, 35.686, "1.85e-18"),
    ("mPLUG-Owl3", 0.535, 0.344, 57.424, "3.81e-22"),
    ("Monkey-Chat", 0.593, 0.370, 57.674, "3.52e-22"),
]
TABLE_2_DF = 19 - 1  # "across all corruption types": the 19 of Bench-C

# Table 3: model, distortion, Acc_orig, ΔAcc, mean ΔS, mean ΔC, mean RAS, WR, RW, category
TABLE_3 = [
    ("Eagle-X5", "Spatter", 0.451, 0.004, 0.001, 0.001, -0.006, 14, 11, "Degraded"),
    ("Emu3-Chat", "Snow", 0.352, 0.009, 0.002, 0.005, -0.020, 30, 22, "Degraded"),
    ("Emu3-Chat", "Gaussian Noise", 0.352, 0.007, -0.001, 0.002, -0.014, 30, 24, "Overconfident"),
    ("Emu3-Chat", "Brightness", 0.352, 0.005, -0.005, 0.009, -0.016, 18, 14, "Overconfident"),
    ("Emu3-Chat", "Speckle Noise", 0.352, 0.002, -0.002, 0.013, -0.025, 28, 26, "Overconfident"),
    ("Emu3-Chat", "Fog", 0.352, 0.001, 0.016, 0.003, -0.016, 35, 34, "Degraded"),
    ("Falcon2-VLM", "Brightness", 0.441, 0.013, 0.002, 0.005, -0.010, 40, 29, "Degraded"),
    ("Falcon2-VLM", "Spatter", 0.441, 0.006, 0.001, -0.003, -0.002, 29, 24, "Hesitant"),
    ("Falcon2-VLM", "Elastic Transform", 0.441, 0.004, 0.001, 0.022, -0.043, 69, 66, "Degraded"),
    ("Falcon2-VLM", "Saturate", 0.441, 0.002, -0.003, 0.012, -0.019, 35, 33, "Overconfident"),
    ("Falcon2-VLM", "Motion Blur", 0.441, 0.001, 0.011, 0.026, -0.042, 50, 49, "Degraded"),
    ("Falcon2-VLM", "Speckle Noise", 0.441, 0.001, 0.005, 0.014, -0.026, 43, 42, "Degraded"),
    ("Idefics3-Llama3", "Spatter", 0.561, 0.007, 0.005, -0.010, -0.001, 25, 19, "Hesitant"),
    ("Molmo", "Contrast", 0.565, 0.002, -0.004, -0.006, -0.004, 20, 18, "Stable"),
    ("SAIL-VL-1.6", "Brightness", 0.580, 0.006, -0.016, -0.001, -0.007, 29, 24, "Stable"),
    ("SAIL-VL-1.6", "Pixelate", 0.580, 0.006, -0.008, 0.004, -0.019, 37, 32, "Overconfident"),
    ("SAIL-VL-1.6", "Contrast", 0.580, 0.005, -0.021, -0.002, -0.010, 32, 28, "Stable"),
    ("SAIL-VL-1.6", "Spatter", 0.580, 0.005, -0.014, -0.003, -0.002, 23, 19, "Stable"),
    ("SAIL-VL-1.6", "Frost", 0.580, 0.002, -0.015, 0.001, -0.015, 39, 37, "Overconfident"),
    ("SAIL-VL-1.6", "Fog", 0.580, 0.001, -0.026, -0.001, -0.016, 41, 40, "Stable"),
    ("SAIL-VL-1.6", "Snow", 0.580, 0.001, -0.013, 0.001, -0.016, 37, 36, "Overconfident"),
    ("DeepSeek-VL2-Small", "Brightness", 0.594, 0.004, 0.006, 0.000, -0.006, 19, 16, "Degraded"),
    ("DeepSeek-VL2-Small", "Saturate", 0.594, 0.001, 0.014, -0.002, -0.007, 22, 21, "Hesitant"),
    ("DeepSeek-VL2-Small", "Snow", 0.594, 0.001, 0.023, 0.002, -0.011, 33, 32, "Degraded"),
    ("mPLUG-Owl3", "Spatter", 0.465, 0.004, 0.009, 0.001, -0.004, 12, 9, "Degraded"),
    ("Monkey-Chat", "Gaussian Blur", 0.417, 0.008, 0.004, 0.005, -0.020, 48, 41, "Degraded"),
    ("Monkey-Chat", "Elastic Transform", 0.417, 0.002, -0.005, 0.012, -0.039, 57, 55,
     "Overconfident"),
    ("Monkey-Chat", "Speckle Noise", 0.417, 0.002, -0.001, 0.022, -0.041, 52, 50,
     "Overconfident"),
]


def _ras_min(ds: float, dc: float) -> float:
    """A mutant of Eq. 10 with minima where the seed has products."""
    return -dc - min(max(dc, 0), max(-ds, 0)) - min(max(ds, 0), max(-dc, 0))


# --- Table 1 -------------------------------------------------------------------

def test_table_1_admits_the_product_form_in_every_row() -> None:
    """Per question our RAS = −ΔC − (penalties ≥ 0) ≤ −ΔC, so its mean is at most
    −mean ΔC: all 13 rows, with a margin (the penalties are not all zero)."""
    rows = np.array([r[1:] for r in TABLE_1])
    _, ras_mean, _, dc = rows.T
    assert (ras_mean <= -dc + 2 * HALF).sum() == 13
    assert (ras_mean < -dc - 2 * HALF).sum() == 13
    # our formula has exactly this relation: ≤ −ΔC, equal where no penalty applies
    rng = np.random.default_rng(0)
    ds, dcs = rng.uniform(-1, 1, 10_000), rng.uniform(-1, 1, 10_000)
    assert (ras(ds, dcs) <= -dcs + 1e-15).all()
    same = ((ds > 0) & (dcs > 0)) | ((ds <= 0) & (dcs <= 0))
    assert np.array_equal(ras(ds, dcs)[same], -dcs[same])


def test_table_1_refutes_the_sum_readings_in_every_row() -> None:
    """Eq. 10 printed as sums: literally (−ΔC − [ΔC]₊ + [−ΔS]₊ − [ΔS]₊ + [−ΔC]₊ =
    −2ΔC − ΔS, linear, so it holds for the means) and with every part subtracted
    (−ΔC − |ΔC| − |ΔS|, whose mean is at most −E ΔC − |E ΔC| − |E ΔS|): 0/13 rows."""
    literal = sum(abs(r + 2 * dc + ds) <= 4 * HALF for _, _, r, ds, dc in TABLE_1)
    subtracted = sum(r <= -dc - abs(dc) - abs(ds) + 3 * HALF for _, _, r, ds, dc in TABLE_1)
    assert (literal, subtracted) == (0, 0)


@pytest.mark.parametrize(("ds", "dc", "want"), [
    (-0.5, 0.5, -0.75),   # overconfident: −0.5 − 0.5·0.5 (min: −1.0)
    (0.2, -0.1, 0.08),    # hesitant: 0.1 − 0.2·0.1 (min: 0.0)
    (-1.0, 1.0, -2.0),    # the seed's lower bound
    (0.0, -1.0, 1.0),     # the seed's upper bound
    (0.3, 0.4, -0.4),     # degraded: no penalty
])
def test_eq_10_products_not_minima(ds: float, dc: float, want: float) -> None:
    got = float(ras([ds], [dc])[0])
    assert got == pytest.approx(want, abs=1e-12)
    if ds * dc < 0 and abs(ds) < 1:
        assert _ras_min(ds, dc) != pytest.approx(want, abs=1e-3)


# --- Table 2 -------------------------------------------------------------------

def _fits(p_printed: str, t: float, tail: float) -> bool:
    """The printed p within half a unit of its 3rd significant digit of ``tail`` ×
    P(T₁₈ ≥ t') for some t' the printed t (3 decimals) stands for."""
    p = float(p_printed)
    unit = 0.5 * 10.0 ** (np.floor(np.log10(p)) - 2)
    lo, hi = (tail * one_sided_p(t + s * HALF, TABLE_2_DF) for s in (1, -1))
    return bool(lo - unit <= p <= hi + unit)


def test_table_2_p_is_the_one_sided_tail_of_t_with_18_df() -> None:
    one_sided = [_fits(p, t, 1.0) for *_, t, p in TABLE_2]
    two_sided = [_fits(p, t, 2.0) for *_, t, p in TABLE_2]
    assert (sum(one_sided), sum(two_sided)) == (13, 0)
    assert all(zr > za for _, zr, za, _, _ in TABLE_2)  # "consistently exceeds"


# --- Table 3 -------------------------------------------------------------------

def test_table_3_delta_acc_from_wr_rw_and_849_questions() -> None:
    hits = 0
    for _, _, _, dacc, *_, wr, rw, _ in TABLE_3:
        clean = np.r_[np.zeros(wr), np.ones(rw), np.ones(N_TABLE_3 - wr - rw)]
        corrupted = np.r_[np.ones(wr), np.zeros(rw), np.ones(N_TABLE_3 - wr - rw)]
        hits += abs(float(delta_accuracy(clean, corrupted).mean()) - dacc) <= HALF
    assert hits == 28


def _signs(printed: float) -> list[float]:
    """Values a printed 3-decimal mean may stand for, one per possible sign."""
    return [printed] if printed != 0 else [-HALF / 2, 0.0, HALF / 2]


def test_table_3_categories_are_the_quadrant_of_the_mean_shifts() -> None:
    names = ("degraded", "overconfident", "hesitant", "stable")
    for model, dist, _, _, ds, dc, ras_mean, *_, category in TABLE_3:
        can = {names[int(quadrant([s], [c])[0])] for s in _signs(ds) for c in _signs(dc)}
        assert category.lower() in can, (model, dist)
        assert ras_mean < 0 and ras_mean <= -dc + 2 * HALF, (model, dist)
    counts = {c: sum(r[-1] == c for r in TABLE_3) for c in
              ("Overconfident", "Degraded", "Hesitant", "Stable")}
    assert counts == {"Overconfident": 9, "Degraded": 11, "Hesitant": 3, "Stable": 5}


def test_table_3_rows_are_the_scorers_gain_cells_at_severity_1() -> None:
    """Each row as a cell at ℓ = 1 and again at ℓ = 2: the gain list keeps the 28
    at ℓ = 1, with ΔAcc = (WR − RW)/N and the printed category."""
    cells = []
    for sev in (1, 2):
        for _, dist, _, _, ds, dc, *_, wr, rw, _ in TABLE_3:
            cells.append({"corruption": dist, "severity": sev, "n": N_TABLE_3,
                          "transitions": {"WR": wr, "RW": rw},
                          "plain": {"delta_acc": (wr - rw) / N_TABLE_3,
                                    # the one printed 0.000 (Degraded): a ΔC under half a unit
                                    "delta_S": ds, "delta_C": dc or HALF / 2}})
    gains = accuracy_gain(cells)
    assert len(gains) == 28 and {g["severity"] for g in gains} == {1}
    for g, row in zip(gains, TABLE_3, strict=True):
        assert g["category"] == row[-1].lower()
        assert abs(g["delta_acc"] - row[3]) <= HALF
