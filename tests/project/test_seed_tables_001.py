"""Seed 001's printed tables (issue 33, "The seeds' printed numbers as tests").

No table of seed 001 prints its inputs, so none can be recomputed from them:
Table I and II print shape biases without the shape / texture decision counts,
Table III prints ImageNet-D accuracies without the per-image answers, and Table
IV prints means (over seven test sets, five OOD sets, six 3D corruptions) without
the per-set numbers. What the text derives from a table, and what the project
derives from a table's row labels, is checked here instead, rows pasted from
the seed text (001_aa5823a131eb92ed.txt), tolerance the printed precision:

- Table IV's rows name their pre-training sets; the project's model groups
  (vlmrobust.models.clip.groups, read from the matching open_clip tags) give each
  row its own training-data group, CommonPool's filtered and unfiltered apart
  (issue 33 item 11), and the six rows per backbone are six groups;
- §X-A quotes Table IV (ViT-B/16 AUROC 0.85 -> 0.88, Larger 0.69 -> 0.80, 3D
  0.34 -> 0.40, LAION-2B -> DFN-2B): the quoted cells are the table's;
- §IV-B (2) says of Table II "Across seven pairs of experiments ... we observe
  this pattern consistently" (higher fine-tuning resolution: more accurate on
  IN-Val, less shape-biased, less accurate on SIN). Shape bias and SIN fall in
  all 7 pairs, but IN-Val rises in 5 and ties in 2 (ViT/L-14 0.88 / 0.88 for both
  sources): the table, not the text, is asserted, and the tie is noted.
"""

from __future__ import annotations

import pytest

from vlmrobust.models.clip.groups import clip_groups

# Table IV: backbone, pre-training dataset, data filtering, then Classification acc,
# AUROC, FPR, ECE before, ECE after, Larger, Shape, Color, Recall@5, 3D robustness.
TABLE_IV = """\
ViT-B/16|LAION-400M|No|0.61|0.84|0.65|0.13|0.05|0.67|0.56|0.63|0.82|0.32
ViT-B/16|MetaCLIP-400M|Yes|0.67|0.85|0.62|0.09|0.08|0.75|0.61|0.67|0.83|0.35
ViT-B/16|LAION-2B|No|0.64|0.85|0.64|0.13|0.05|0.69|0.60|0.67|0.84|0.34
ViT-B/16|DFN-2B|Yes|0.70|0.88|0.52|0.12|0.07|0.80|0.66|0.73|0.85|0.40
ViT-B/16|CommonPool-L|No|0.43|0.73|0.86|0.06|0.07|0.45|0.46|0.58|0.64|0.19
ViT-B/16|CommonPool-L-CLIP|Yes|0.53|0.77|0.81|0.11|0.07|0.61|0.53|0.56|0.72|0.26
ViT-L/14|LAION-400M|No|0.68|0.86|0.59|0.17|0.06|0.75|0.64|0.70|0.85|0.38
ViT-L/14|MetaCLIP-400M|Yes|0.76|0.89|0.50|0.09|0.06|0.74|0.67|0.74|0.85|0.45
ViT-L/14|LAION-2B|No|0.72|0.88|0.52|0.11|0.04|0.82|0.66|0.72|0.87|0.42
ViT-L/14|DFN-2B|Yes|0.78|0.91|0.39|0.07|0.04|0.85|0.74|0.79|0.88|0.50
ViT-L/14|CommonPool-XL|No|0.72|0.87|0.54|0.03|0.04|0.72|0.65|0.70|0.80|0.43
ViT-L/14|CommonPool-XL-CLIP|Yes|0.75|0.88|0.54|0.08|0.03|0.74|0.67|0.74|0.84|0.46"""
COLUMNS = ("accuracy", "auroc", "fpr", "ece_before", "ece_after", "larger", "shape", "color",
           "recall5", "3d")
ROWS = {(b, d): dict(zip(COLUMNS, map(float, v), strict=True))
        for b, d, _, *v in (line.split("|") for line in TABLE_IV.splitlines())}
FILTERED = {(b, d): f == "Yes" for b, d, f, *_ in (line.split("|") for line in TABLE_IV.splitlines())}
# each row's open_clip (architecture, pretrained tag)
TAGS = {"LAION-400M": "laion400m_e32", "MetaCLIP-400M": "metaclip_400m",
        "LAION-2B": {"ViT-B/16": "laion2b_s34b_b88k", "ViT-L/14": "laion2b_s32b_b82k"},
        "DFN-2B": "dfn2b", "CommonPool-L": "commonpool_l_s1b_b8k",
        "CommonPool-L-CLIP": "commonpool_l_clip_s1b_b8k",
        "CommonPool-XL": "commonpool_xl_s13b_b90k",
        "CommonPool-XL-CLIP": "commonpool_xl_clip_s13b_b90k"}
ARCH = {"ViT-B/16": "ViT-B-16", "ViT-L/14": "ViT-L-14"}

# Table II: source, backbone, shape bias (high / 224), IN-Val (high / 224), SIN (high / 224)
TABLE_II = """\
LAION|ViT/H-14 (336/224)|0.42|0.51|0.89|0.88|0.28|0.32
LAION|ViT/L-14 (336/224)|0.41|0.47|0.88|0.88|0.27|0.31
LAION|ViT/B-16 (384/224)|0.35|0.43|0.87|0.86|0.23|0.25
LAION|ViT/B-32 (384/224)|0.33|0.45|0.85|0.83|0.21|0.22
LAION|ConvNeXt-B (384/224)|0.31|0.38|0.87|0.86|0.17|0.21
WIT|ViT/L-14 (336/224)|0.39|0.45|0.88|0.88|0.24|0.30
WIT|ViT/B-16 (384/224)|0.35|0.41|0.87|0.86|0.22|0.23"""


def _tag(backbone: str, dataset: str) -> str:
    t = TAGS[dataset]
    return t[backbone] if isinstance(t, dict) else t


def test_table_iv_rows_are_distinct_training_data_groups() -> None:
    for backbone in ARCH:
        groups = {d: clip_groups(ARCH[backbone], _tag(backbone, d)) for b, d in ROWS if b == backbone}
        assert all(g["architecture"] == "vit" for g in groups.values())
        data = [g["training_data"] for g in groups.values()]
        assert len(set(data)) == len(data) == 6, data
    # the pairs Table IV puts side by side: unfiltered pool vs its CLIP-score filter
    assert clip_groups("ViT-B-16", _tag("ViT-B/16", "CommonPool-L"))["training_data"] == "commonpool-l"
    assert clip_groups("ViT-B-16", _tag("ViT-B/16", "CommonPool-L-CLIP"))["training_data"] == \
        "commonpool-l-clip"
    assert clip_groups("ViT-L-14", _tag("ViT-L/14", "CommonPool-XL-CLIP"))["training_data"] == \
        "commonpool-xl-clip"
    assert FILTERED[("ViT-L/14", "CommonPool-XL-CLIP")] and not FILTERED[("ViT-L/14", "CommonPool-XL")]


@pytest.mark.parametrize(("column", "before", "after"), [
    ("auroc", 0.85, 0.88), ("larger", 0.69, 0.80), ("3d", 0.34, 0.40)])
def test_the_text_quotes_table_iv(column: str, before: float, after: float) -> None:
    """§X-A: "OOD detection sees an increase in AUROC for ViT-B/16 from 0.85 (LAION-2B)
    to 0.88 (DFN-2B) ... DFN-2B improving accuracy on Larger from 0.69 to 0.80 and on
    3D corruption from 0.34 to 0.40 for ViT-B/16"."""
    assert ROWS[("ViT-B/16", "LAION-2B")][column] == pytest.approx(before, abs=0.005)
    assert ROWS[("ViT-B/16", "DFN-2B")][column] == pytest.approx(after, abs=0.005)


def test_table_ii_pattern_and_the_texts_overstatement() -> None:
    rows = [line.split("|") for line in TABLE_II.splitlines()]
    assert len(rows) == 7  # "seven pairs of experiments and two training sources"
    hi_lo = [tuple(map(float, r[2:])) for r in rows]
    assert all(sb_hi < sb_lo for sb_hi, sb_lo, *_ in hi_lo)  # less shape-biased at high res
    assert all(sin_hi < sin_lo for *_, sin_hi, sin_lo in hi_lo)  # less accurate on SIN
    val = [(v_hi, v_lo) for _, _, v_hi, v_lo, _, _ in hi_lo]
    assert all(v_hi >= v_lo for v_hi, v_lo in val)
    # the text's "better accuracy on ImageNet validation" holds in 5 pairs; 2 tie
    assert sum(v_hi > v_lo for v_hi, v_lo in val) == 5
    assert [r[1] for r, (v_hi, v_lo) in zip(rows, val, strict=True) if v_hi == v_lo] == \
        ["ViT/L-14 (336/224)", "ViT/L-14 (336/224)"]
