"""The rows of one config of a classification dataset as the dataset index
holds them: their positions (a slice where contiguous) and, for
ImageNet-Vid-Robust, their perturbation sets (evaluation/scoring/classification.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from vlmrobust.core.errors import VlmrobustError


def config_rows(config: NDArray[np.object_], name: str) -> slice | NDArray[np.int64]:
    """The rows of one config: a slice when contiguous (as load_dataset_index
    reads them), so that the config's logits are a view, not a copy."""
    rows = np.flatnonzero(config == name)
    if rows.size and rows[-1] - rows[0] + 1 == rows.size:
        return slice(int(rows[0]), int(rows[-1]) + 1)
    return rows


def perturbation_sets(index: Any, rows: slice | NDArray[np.int64], name: str,
                       ) -> tuple[NDArray[np.object_] | None, NDArray[np.bool_] | None]:
    """A config's ``pmset`` column and which rows are anchors (their own
    ``source_file`` is their set's anchor), or (None, None) where no row names a
    set; a config with some rows in no set, or a set without its anchor frame, is
    refused."""
    if "pmset" not in index.columns:
        return None, None
    pmset = index.columns["pmset"][rows]
    missing = np.array([p is None for p in pmset.tolist()], dtype=bool)
    if missing.all():
        return None, None
    if missing.any():
        j = int(np.flatnonzero(missing)[0])
        raise VlmrobustError(f"config {name} row id {index.ids[rows][j]!r}: no pmset while other rows "
                             "of the config have one; rebuild the dataset")
    if "source_file" in index.columns:
        own = index.columns["source_file"][rows]
    else:  # ids are "<config>/<source key>"
        own = np.array([str(i).split("/", 1)[-1] for i in index.ids[rows].tolist()], dtype=object)
    anchor = np.asarray(own == pmset, dtype=bool)
    found = set(pmset[anchor].tolist())
    lost = next((p for p in pmset.tolist() if p not in found), None)
    if lost is not None:
        raise VlmrobustError(f"config {name}: perturbation set {lost!r} has no row for its anchor "
                             "frame; rebuild the dataset")
    return pmset, anchor
