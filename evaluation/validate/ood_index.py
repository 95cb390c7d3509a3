"""The dataset side of an OOD dataset (kind ``ood``): what its predictions are
checked against.

An OOD config's rows are ImageNet-val (ID) images with their ``label`` and
OOD images with ``label`` -1 and ``is_ood`` true: an OOD row has no answer, and
this kind is the only one where that is accepted
(:func:`vlmrobust.evaluation.validate.dataset_index.answer_problem` refuses it everywhere else). A prediction gives logits over the config's label
space, so every row's option count is the label space's size (recorded in the
manifest's ``label_spaces``); no option text is materialised per row.
``ood_source`` (the OOD set a row comes from: ``inaturalist``, ``ninco``, ...)
and ``ood_class`` (NINCO's class, for its class-mean AUROC) travel as family
columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.kinds import OOD
from vlmrobust.core.label_space import MAX_CLASSES, read_label_space
from vlmrobust.evaluation.validate.index import DatasetIndex, answer_column, answer_problem

#: Family columns of the ood kind read for scoring (when the dataset has them).
OOD_COLUMNS = ("is_ood", "ood_source", "ood_class")

NEEDS_LOGITS = ("OOD detection scores (MSP, MCM, max-logit, energy) are computed from logits "
                "over the label space; predict with a reader that gives logits")


def n_classes_of(manifest: Mapping[str, Any], config: str, where: str) -> int:
    """The size of ``config``'s label space, as the manifest records it."""
    records = manifest.get("label_spaces")
    rec = records.get(config) if isinstance(records, Mapping) else None
    n = rec.get("n_classes") if isinstance(rec, Mapping) else None
    if isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= MAX_CLASSES:
        raise VlmrobustError(f"{where}/manifest.json records no label space size for config "
                             f"{config!r}; rebuild the dataset")
    return n


def ood_index(dataset_dir: Path, manifest: Mapping[str, Any], chosen: Sequence[str],
              other: Mapping[str, str]) -> DatasetIndex:
    """The :class:`DatasetIndex` of an ood dataset's ``chosen`` configs:
    ``answer`` = ``label`` (-1 on OOD rows), ``n_options`` = the label space's
    size, ``columns`` = ``is_ood`` (bool), ``ood_source`` and ``ood_class``
    (strings; "" where the dataset has no such column)."""
    from vlmrobust.core.datadir import read_table

    features = set(manifest.get("features") or {})
    missing = [c for c in ("id", "label", "is_ood") if c not in features]
    if missing:
        raise VlmrobustError(f"{dataset_dir}: an ood dataset needs columns id, label and is_ood "
                             f"(lacks {', '.join(missing)}); rebuild it")
    wanted = ["id", "label", *[c for c in OOD_COLUMNS if c in features]]
    ids: list[Any] = []
    labels: list[NDArray[np.float64]] = []
    config: list[str] = []
    k: list[int] = []
    cols: dict[str, list[Any]] = {c: [] for c in OOD_COLUMNS}
    spaces = {c: read_label_space(dataset_dir, c, manifest) for c in chosen}
    for name in chosen:
        n = len(spaces[name])
        t = read_table(dataset_dir, name, columns=wanted)
        ids += t.column("id").to_pylist()
        labels.append(answer_column(t, "label"))
        config += [name] * t.num_rows
        k += [n] * t.num_rows
        for c in OOD_COLUMNS:
            values = t.column(c).to_pylist() if c in features else [None] * t.num_rows
            cols[c] += values if c == "is_ood" else ["" if v is None else str(v) for v in values]
    if any(v is None for v in cols["is_ood"]):
        bad = ids[cols["is_ood"].index(None)]
        raise VlmrobustError(f"{dataset_dir}: row {bad!r} has no is_ood; rebuild the dataset")
    is_ood = np.asarray(cols["is_ood"], dtype=bool)
    n_options = np.asarray(k, dtype=np.int64)
    label = np.concatenate(labels) if labels else np.empty(0, dtype=np.float64)
    why = answer_problem(ids, label, n_options, is_ood, str(dataset_dir))
    if why is not None:
        raise VlmrobustError(why)
    return DatasetIndex(
        manifest=manifest, configs=tuple(dict.fromkeys(config)),
        ids=np.asarray(ids, dtype=object), config=np.asarray(config, dtype=object),
        n_options=n_options, answer=label.astype(np.int64), kind=OOD, label_spaces=spaces,
        labels=label.astype(np.int64), needs_logits=NEEDS_LOGITS,
        columns={"is_ood": is_ood, "ood_source": np.asarray(cols["ood_source"], dtype=object),
                 "ood_class": np.asarray(cols["ood_class"], dtype=object)},
        other_ids=dict(other))
