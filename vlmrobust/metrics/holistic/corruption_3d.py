"""Seed 001's 3D-corruption numbers (§VIII-B, Fig. 8, Table IV) from per-cell
accuracies on 3DCC (Kar et al. 2022; ``3dcc-<corruption>-<severity>`` configs).

- The aggregate (Table IV's "3D robustness"): "we use accuracy to metric their
  mean performance on six 3D-related corruptions with severity level 5",

      acc_3D(s) = (1/6) Σ_{c ∈ C6} acc(c, s),   s = 5,

  with C6 Fig. 8's six: fog, near focus, z-motion blur, flash, xy-motion blur and
  far focus. It is None unless all six cells are scored (a mean over fewer is
  not Table IV's number).
- The slope gap (Fig. 8): the lines of CNN-based and ViT-based CLIP models
  (corrupted accuracy against ImageNet-val accuracy) have slopes a_cnn and
  a_vit; "the gap between the slopes, represented by tan(Δ_S)" is read as the
  tangent of the angle between the two lines,

      Δ_S = arctan(a_cnn) − arctan(a_vit),
      tan(Δ_S) = (a_cnn − a_vit) / (1 + a_cnn · a_vit),

  positive when the CNN line is steeper (the seed's finding).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

#: Seed 001 Fig. 8's six 3D corruptions, as 3DCC's release names its folders.
SEED_CORRUPTIONS = ("fog_3d", "near_focus", "z_motion_blur", "flash", "xy_motion_blur",
                    "far_focus")
#: Table IV's severity.
SEED_SEVERITY = 5
_CONFIG = re.compile(r"3dcc-([a-z0-9_]+)-([1-5])")


def parse_config(config: str) -> tuple[str, int] | None:
    """(corruption, severity) of a ``3dcc-<corruption>-<severity>`` config, else None.

    >>> parse_config("3dcc-fog_3d-5"), parse_config("imagenet-val")
    (('fog_3d', 5), None)
    """
    m = _CONFIG.fullmatch(config)
    return (m.group(1), int(m.group(2))) if m else None


def mean_3d_accuracy(cells: Mapping[tuple[str, int], float | None],
                     severity: int = SEED_SEVERITY) -> float | None:
    """acc_3D(severity): the mean accuracy over :data:`SEED_CORRUPTIONS` at
    ``severity`` (``cells``: (corruption, severity) -> accuracy); None when any
    of the six is missing.

    >>> cells = {(c, 5): 0.3 + 0.02 * i for i, c in enumerate(SEED_CORRUPTIONS)}
    >>> round(mean_3d_accuracy(cells), 6), mean_3d_accuracy(cells, 3)
    (0.35, None)
    """
    if not 1 <= severity <= 5:
        raise ValueError(f"severity must be in 1..5, got {severity}")
    values = [cells.get((c, severity)) for c in SEED_CORRUPTIONS]
    if any(v is None for v in values):
        return None
    return sum(v for v in values if v is not None) / len(values)


def slope_gap(slope_cnn: float, slope_vit: float) -> tuple[float, float]:
    """(Δ_S in degrees, tan(Δ_S)) between the CNN and the ViT line.

    >>> [round(v, 6) for v in slope_gap(1.0, 0.0)]
    [45.0, 1.0]
    >>> [round(v, 6) for v in slope_gap(0.5, 0.5)]
    [0.0, 0.0]
    """
    if not (math.isfinite(slope_cnn) and math.isfinite(slope_vit)):
        raise ValueError(f"slopes must be finite, got {slope_cnn}, {slope_vit}")
    delta = math.atan(slope_cnn) - math.atan(slope_vit)
    return math.degrees(delta), math.tan(delta)
