"""Family blocks added to a classification dataset's scores.json section
(score.py calls :func:`add_family_blocks` after the classification scorer):

- ``factors`` / ``factor_annotations`` on each label-space config whose rows
  are all imagenet-val (vlmrobust.evaluation.scoring.factors): ImageNet-X factor
  accuracy over the full label space, seed 001's measure;
- ``shape_bias`` for cue-conflict datasets (rows with ``texture_label``;
  vlmrobust.evaluation.scoring.shape_bias).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from vlmrobust.evaluation.scoring.factors import annotation_record, annotations_for, factor_block
from vlmrobust.evaluation.scoring.shape_bias import shape_bias_section


def add_family_blocks(report: Any, configs: dict[str, dict[str, Any]], section: dict[str, Any],
                      seed: int, imagenet_x: Path | str | None = None) -> None:
    """Add the factor blocks to ``configs`` and ``shape_bias`` to ``section`` (in place)."""
    index = report.index
    predicted = report.aligned.predicted
    annotations = annotations_for(index, imagenet_x)
    if annotations is not None:
        for config, out in configs.items():
            rows = np.flatnonzero(index.config == config)
            if index.candidates is not None and any(index.candidates[r] for r in rows[:1]):
                continue  # a K-option config: not the full label space
            block = factor_block(index, rows, predicted[rows] == index.answer[rows], annotations)
            if block is not None:
                out["factors"] = block
                out["factor_annotations"] = annotation_record(annotations)
    names = {c: index.label_spaces[c].names for c in index.configs if c in index.label_spaces}
    if index.candidates is not None and any(len(c) for c in index.candidates):
        return  # shape bias is a decision over the whole 16-category space
    shape = shape_bias_section(index.columns, index.config, index.configs, index.answer,
                               predicted, names, seed)
    if shape is not None:
        section["shape_bias"] = shape
