"""Tiny real ood datasets (kind ``ood``, written with vlmrobust.core.writer) and
their predictions files, for the OOD validate/score tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tests.score_fixtures import png
from vlmrobust.core.kinds import OOD
from vlmrobust.core.label_space import ClassEntry, LabelSpace
from vlmrobust.core.writer import BuildInfo, write_dataset

SPACE = LabelSpace("toy-in", (ClassEntry("tench", (), "n01440764", (0,)),
                              ClassEntry("goldfish", (), "n01443537", (1,)),
                              ClassEntry("great white shark", (), "n01484850", (2,)),
                              ClassEntry("tiger shark", (), "n01491361", (3,))))


def ood_features() -> datasets.Features:
    return datasets.Features({
        "id": datasets.Value("string"), "image": datasets.Image(), "label": datasets.Value("int32"),
        "is_ood": datasets.Value("bool"), "ood_source": datasets.Value("string"),
        "ood_class": datasets.Value("string"),
    })


def ood_rows(n_id: int = 12, n_textures: int = 6, ninco: tuple[int, ...] = (4, 3)
             ) -> dict[str, list[dict[str, Any]]]:
    """Configs ``imagenet-val`` (ID), ``textures`` (OOD, no classes) and
    ``ninco`` (OOD, classes ``c0``, ``c1``, ... of the given sizes)."""
    def row(rid: str, seed: int, label: int, source: str = "", cls: str = "") -> dict[str, Any]:
        return {"id": rid, "image": {"bytes": png(seed), "path": None}, "label": label,
                "is_ood": label < 0, "ood_source": source, "ood_class": cls}
    ninco_rows = [row(f"ninco-{c}-{j}", 500 + 10 * c + j, -1, "ninco", f"c{c}")
                  for c, size in enumerate(ninco) for j in range(size)]
    return {"imagenet-val": [row(f"val-{i:03d}", i, i % 4) for i in range(n_id)],
            "textures": [row(f"tex-{i:03d}", 100 + i, -1, "textures") for i in range(n_textures)],
            "ninco": ninco_rows}


def write_ood(out: Path, configs: dict[str, list[dict[str, Any]]] | None = None) -> Path:
    configs = configs if configs is not None else ood_rows()
    write_dataset(out, configs=configs, features=ood_features(), card="toy ood",
                  info=BuildInfo("ood", "0.1.0", 0, sample=True), kind=OOD,
                  label_spaces={c: SPACE for c in configs})
    return out


def dataset_ids(dataset_dir: Path) -> list[tuple[str, str, bool]]:
    """(config, id, is_ood) of every row, in dataset order."""
    manifest = json.loads((dataset_dir / "manifest.json").read_text())
    out = []
    for config in manifest["configs"]:
        for shard in sorted((dataset_dir / "data" / config).glob("*.parquet")):
            t = pq.read_table(shard, columns=["id", "is_ood"])
            out += [(config, i, o) for i, o in zip(t.column("id").to_pylist(),
                                                   t.column("is_ood").to_pylist(), strict=True)]
    return out


def write_logits(path: Path, ids: list[str], logits: np.ndarray[Any, Any]) -> Path:
    pq.write_table(pa.table({"id": ids, "logits": [np.asarray(r, np.float32).tolist() for r in logits]}),
                   path)
    return path
