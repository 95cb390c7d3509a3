"""Synthetic submissions with realistic values, for tests, benchmarks and site
previews. Accuracies follow a per-family line in probit space plus model-specific
effective robustness, so fits and plots look like real leaderboards.

Deterministic: every model draws from its own generator seeded by (seed, index).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from scipy.special import ndtr

from vlmrobust.leaderboard.pages.bench_c import CORRUPTIONS
from vlmrobust.leaderboard.submission import QUADRANTS, TRANSITIONS

SAMPLE_VARIANTS = ("sample-photo", "sample-rendition")
REAL_VARIANTS = ("imagenet-val", "imagenet-v2", "imagenet-r", "imagenet-sketch", "objectnet",
                 "imagenet-a")
STRATEGIES = ("random", "wordnet", "visual")
# (slope, intercept) of the family's probit line per shift index; VLMs and CLIP sit
# higher than classifiers on renditions (the "language helps" hypothesis).
FAMILY_LINES = {"classifier": (0.9, -0.9), "clip": (0.8, -0.3), "vlm": (0.75, -0.2)}
ENCODERS = {"classifier": "efficientnet-lite", "clip": "ViT-B-32", "vlm": "SigLIP-so400m"}
# model groups (evaluation/model_groups.py) of each family's synthetic models
GROUPS: dict[str, dict[str, Any]] = {
    "classifier": {"architecture": "cnn", "training_data": "imagenet-1k",
                   "training_size": 1_281_167, "loss": "ce"},
    "clip": {"architecture": "vit", "training_data": "laion-2b", "training_size": 2_000_000_000,
             "loss": "contrastive"},
    "vlm": {"architecture": "vit", "training_data": "llava-665k", "loss": "generative"}}
FINGERPRINTS = {"imagenet-mcq": "a" * 64, "bench-c": "b" * 64, "imagewikiqa": "c" * 64}


def _rng(seed: int, i: int) -> np.random.Generator:
    d = hashlib.sha256(f"{seed}:{i}".encode()).digest()
    return np.random.default_rng(int.from_bytes(d[:8], "little"))


def _acc(x: float) -> float:
    return float(np.clip(x, 0.0, 1.0))


def _ci(acc: float, n: int) -> list[float]:
    half = 1.96 * float(np.sqrt(max(acc * (1 - acc), 1e-6) / n))
    return [_acc(acc - half), _acc(acc + half)]


def _imagenet(rng: np.random.Generator, family: str, ability: float,
              variants: Sequence[str], strategies: Sequence[str]) -> dict[str, Any]:
    slope, intercept = FAMILY_LINES.get(family, (0.85, -0.5))
    er = float(rng.normal(0.0, 0.15))
    configs = {}
    for st_i, st in enumerate(strategies):
        # Harder distractor strategies lower every accuracy a little.
        z_ref = ability - 0.25 * st_i
        for v_i, v in enumerate(variants):
            z = z_ref if v_i == 0 else (slope * z_ref + intercept - 0.15 * (v_i - 1) + er
                                        + float(rng.normal(0.0, 0.05)))
            n = 60 if v.startswith("sample") else 5000
            acc = round(float(ndtr(z)), 4)
            configs[f"{v}-{st}"] = {
                "n": n, "accuracy": acc, "accuracy_ci": _ci(acc, n), "variant": v,
                "strategy": st, "ece": round(float(rng.uniform(0.02, 0.2)), 4),
                "nll": round(float(rng.uniform(0.3, 1.5)), 4),
                "ece_ts": round(float(rng.uniform(0.01, 0.08)), 4),
                "nll_ts": round(float(rng.uniform(0.3, 1.2)), 4),
                "temperature": round(float(rng.uniform(0.7, 2.0)), 4)}
    return {"dataset": {"name": "imagenet-mcq", "version": "1.0.0",
                        "fingerprint": FINGERPRINTS["imagenet-mcq"],
                        "sample": variants[0].startswith("sample")},
            "has_logits": True, "reference_variant": variants[0], "configs": configs,
            "bench_c": None}


def _counts(rng: np.random.Generator, names: Sequence[str], n: int) -> dict[str, int]:
    return dict(zip(names, (int(c) for c in rng.multinomial(n, [1 / len(names)] * len(names))),
                    strict=True))


def _bench_c(rng: np.random.Generator, clean: float) -> dict[str, Any]:
    cells: list[dict[str, Any]] = []
    for c_i, corruption in enumerate(CORRUPTIONS):
        hardness = 0.02 + 0.02 * (c_i % 5)
        for sev in range(1, 6):
            acc = _acc(clean - hardness * sev + float(rng.normal(0, 0.02)))
            d_s = float(rng.normal(0.03 * sev, 0.03))
            d_c = float(rng.normal(0.02 * sev, 0.03))
            ras = -d_c - max(d_c, 0) * max(-d_s, 0) - max(d_s, 0) * max(-d_c, 0)
            n = 40
            cells.append({
                "corruption": corruption, "severity": sev, "n": n, "acc": round(acc, 4),
                "delta_acc": round(acc - clean, 4), "S": round(0.3 + d_s, 4),
                "delta_S": round(d_s, 4), "C": round(0.2 + d_c, 4), "delta_C": round(d_c, 4),
                "ras": round(ras, 4), "quadrants": _counts(rng, QUADRANTS, n),
                "transitions": _counts(rng, TRANSITIONS, n)})
    keys = ("acc", "delta_acc", "S", "delta_S", "C", "delta_C", "ras")
    agg: dict[str, Any] = {k: round(float(np.mean([c[k] for c in cells])), 6) for k in keys}
    agg["destructive_ras"] = round(agg["ras"] - float(rng.uniform(0.0, 0.1)), 6)
    agg["corrective_ras"] = round(agg["ras"] + float(rng.uniform(-0.05, 0.1)), 6)
    agg["quadrants"] = {q: sum(c["quadrants"][q] for c in cells) for q in QUADRANTS}
    agg["transitions"] = {t: sum(c["transitions"][t] for c in cells) for t in TRANSITIONS}
    return {"dataset": {"name": "bench-c", "version": "1.0.0",
                        "fingerprint": FINGERPRINTS["bench-c"], "sample": False},
            "has_logits": True, "reference_variant": None, "configs": {
                "default": {"n": 40 * 96, "accuracy": agg["acc"], "accuracy_ci": None}},
            "bench_c": {"clean_accuracy": round(clean, 4), "cells": cells, "aggregate": agg}}


def synthetic_submission(i: int, family: str, *, seed: int = 0,
                         variants: Sequence[str] = SAMPLE_VARIANTS,
                         strategies: Sequence[str] = STRATEGIES,
                         name: str | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(meta.yaml mapping, scores.json mapping) of synthetic model number ``i``."""
    rng = _rng(seed, i)
    model_id = f"{family}-{i:04d}"
    ability = float(rng.uniform(-0.2, 1.6))
    meta = {"model_id": model_id, "name": name or f"Synthetic {family} {i}", "family": family,
            "vision_encoder": ENCODERS.get(family, "unknown"),
            "params": int(rng.integers(4, 8000)) * 1_000_000, "prompt_id": "default",
            "date": "2026-01-01", "tool_version": "0.1.0", "adapter": f"{family}:synthetic",
            **GROUPS.get(family, {})}
    clean = _acc(float(ndtr(ability - 0.3)))
    iwqa_acc = round(_acc(float(ndtr(0.5 * ability - 0.2))), 4)
    scores = {"schema_version": 1, "model_id": model_id, "datasets": {
        "imagenet-mcq": _imagenet(rng, family, ability, variants, strategies),
        "bench-c": _bench_c(rng, clean),
        "imagewikiqa": {"dataset": {"name": "imagewikiqa", "version": "1.0.0",
                                    "fingerprint": FINGERPRINTS["imagewikiqa"],
                                    "sample": False},
                        "has_logits": True, "reference_variant": None,
                        "configs": {"default": {"n": 500, "accuracy": iwqa_acc,
                                                "accuracy_ci": _ci(iwqa_acc, 500)}},
                        "bench_c": None}}}
    return meta, scores


def write_submission(root: Path, meta: dict[str, Any], scores: dict[str, Any]) -> Path:
    folder = Path(root) / str(meta["model_id"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "meta.yaml").write_text(yaml.safe_dump(meta, sort_keys=True, allow_unicode=True),
                                      encoding="utf-8")
    (folder / "scores.json").write_text(json.dumps(scores, indent=1), encoding="utf-8")
    return folder


def write_synthetic_submissions(root: Path, n: int, *, seed: int = 0,
                                families: Sequence[str] = ("classifier", "clip", "vlm"),
                                variants: Sequence[str] = SAMPLE_VARIANTS,
                                strategies: Sequence[str] = STRATEGIES) -> list[Path]:
    """``n`` synthetic submissions, families assigned round-robin."""
    return [write_submission(root, *synthetic_submission(
        i, families[i % len(families)], seed=seed, variants=variants, strategies=strategies))
        for i in range(n)]




def copy_submissions(source: Path, root: Path, n: int, *,
                     predictions: bool = True) -> list[Path]:
    """``n`` submissions made from the real ones in ``source`` (e.g. a demo's
    ``submissions/``), round-robin: copy ``k`` of ``<id>`` is ``<id>-c<k>``, named
    ``<name> #<k>``. Its predictions are the original's rows, rewritten with the
    copy's name in the file's metadata: the leaderboard refuses a byte-for-byte
    copied run, and these re-score to the original's numbers. Other files are
    hard links (copies where links are not possible). ``predictions=False`` writes
    meta.yaml and scores.json only (a site built from the records, not re-scored).
    Deterministic."""
    import os
    import shutil

    import pyarrow.parquet as pq

    folders = sorted(p for p in Path(source).iterdir()
                     if p.is_dir() and (p / "meta.yaml").is_file())
    if not folders:
        raise ValueError(f"{source}: no submission folders (meta.yaml + scores.json) to copy")
    out = []
    for i in range(n):
        src, k = folders[i % len(folders)], i // len(folders)
        meta = yaml.safe_load((src / "meta.yaml").read_text(encoding="utf-8"))
        scores = json.loads((src / "scores.json").read_text(encoding="utf-8"))
        model_id = f"{meta['model_id']}-c{k}"
        meta.update(model_id=model_id, name=f"{meta['name']} #{k}")
        scores["model_id"] = model_id
        folder = Path(root) / model_id
        for path in sorted(src.rglob("*")) if predictions else ():
            rel = path.relative_to(src)
            if path.is_dir() or rel.as_posix() in ("meta.yaml", "scores.json"):
                continue
            target = folder / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if path.name == "predictions.parquet":
                table = pq.read_table(path)
                table = table.replace_schema_metadata(
                    {**(table.schema.metadata or {}), b"vlmrobust.copy": model_id.encode()})
                pq.write_table(table, target)
                section = scores["datasets"].get(rel.parts[0])
                if isinstance(section, dict) and "predictions_sha256" in section:
                    section["predictions_sha256"] = hashlib.sha256(target.read_bytes()).hexdigest()
                continue
            try:
                os.link(path, target)
            except OSError:
                shutil.copyfile(path, target)
        out.append(write_submission(root, meta, scores))
    return out
