"""What ``vlmrobust eval`` will do: every dataset of a suite found on disk (a
store folder, a local folder or a hub snapshot), its configs after the
``--datasets`` / ``--configs`` filters, its row counts from the manifest, and
the reader the suite gives the model's family, or why it is skipped. Nothing
here loads a model."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.suite.spec import ReaderChoice, Suite, SuiteDataset

STORE_ENV = "VLMROBUST_DATASETS"


@dataclass(frozen=True)
class PlanEntry:
    """One dataset of the run: where it is, the configs run and their rows, how
    it is read; ``skip`` (with ``reader.skip`` or ``missing``) when it is not run."""

    dataset: SuiteDataset
    reader: ReaderChoice
    path: Path | None
    configs: tuple[str, ...]
    rows: tuple[int, ...]
    fingerprint: str | None = None
    version: str | None = None
    missing: str | None = None

    @property
    def name(self) -> str:
        return self.dataset.name

    @property
    def skip(self) -> str | None:
        return self.reader.skip or self.missing

    def rows_run(self, limit: int | None) -> int:
        return sum(n if limit is None else min(n, limit) for n in self.rows)


@dataclass(frozen=True)
class Plan:
    suite: Suite
    model: str
    family: str
    entries: tuple[PlanEntry, ...]

    @property
    def runnable(self) -> tuple[PlanEntry, ...]:
        return tuple(e for e in self.entries if e.skip is None)


def model_family(model: str) -> str:
    """The family a model name belongs to (its prefix: classifier, clip, vlm,
    endpoint, pipeline, describe, moondream); the name is checked as predict
    checks it, without loading anything."""
    from vlmrobust.models import parse_adapter_name

    parse_adapter_name(model)
    return model.partition(":")[0]


def stores(given: Sequence[Path]) -> list[Path]:
    """--dataset-store folders, then $VLMROBUST_DATASETS (os.pathsep-separated)."""
    env = [Path(p) for p in os.environ.get(STORE_ENV, "").split(os.pathsep) if p]
    return [*given, *env]


def _hub_dir(d: SuiteDataset, manifest_only: bool) -> Path:
    """A hub dataset's snapshot at the suite's revision (huggingface_hub's cache);
    only its manifest for a plan."""
    from huggingface_hub import hf_hub_download, snapshot_download

    assert d.hub is not None
    try:
        if manifest_only:
            return Path(hf_hub_download(d.hub, "manifest.json", repo_type="dataset",
                                        revision=d.revision)).parent
        return Path(snapshot_download(d.hub, repo_type="dataset", revision=d.revision))
    except Exception as exc:  # offline, no such repo or tag: the hub's own words
        raise VlmrobustError(f"dataset {d.name!r}: hub {d.hub}@{d.revision} cannot be fetched "
                             f"({type(exc).__name__}: {str(exc).splitlines()[0][:160]}); "
                             "download it and list it with path: in the suite") from None


def locate(d: SuiteDataset, store_dirs: Sequence[Path], manifest_only: bool = False,
           ) -> tuple[Path | None, str | None]:
    """(the dataset folder, None) or (None, why it is missing and how to fix it)."""
    if d.path is not None:
        if (d.path / "manifest.json").is_file():
            return d.path, None
        return None, f"{d.path} is not a built dataset (no manifest.json)"
    if d.hub is not None:
        return _hub_dir(d, manifest_only), None
    assert d.store is not None
    for root in store_dirs:
        if (root / d.store / "manifest.json").is_file():
            return root / d.store, None
    where = ", ".join(str(s) for s in store_dirs) or "none given"
    return None, (f"no {d.store}/ in the dataset store ({where}); build it with `vlmrobust "
                  f"build {d.name} ... --out STORE/{d.store}`, or pass --dataset-store DIR "
                  f"(or ${STORE_ENV})")


def _check_filter(names: Sequence[str] | None, known: Sequence[str], what: str, suite: str) -> None:
    for n in names or ():
        if n not in known:
            raise VlmrobustError(f"--{what} {n}: not in suite {suite} (it has: "
                                 f"{', '.join(known) or 'none'})")


def make_plan(suite: Suite, model: str, store_dirs: Sequence[Path],
              datasets: Sequence[str] | None = None, configs: Sequence[str] | None = None,
              manifest_only: bool = False) -> Plan:
    """The run of ``model`` through ``suite``: ``datasets`` keeps the named
    datasets, ``configs`` the named configs (of whichever datasets have them)."""
    from vlmrobust.core.datadir import read_manifest

    family = model_family(model)
    _check_filter(datasets, [d.name for d in suite.datasets], "datasets", suite.name)
    entries: list[PlanEntry] = []
    all_configs: set[str] = set()
    for d in suite.datasets:
        if datasets and d.name not in datasets:
            continue
        reader = suite.reader(family, d.name)
        path, missing = locate(d, store_dirs, manifest_only)
        if path is None:
            entries.append(PlanEntry(d, reader, None, d.configs or (), (), missing=missing))
            continue
        manifest: dict[str, Any] = read_manifest(path)
        counts = {str(c): int(n) for c, n in (manifest.get("configs") or {}).items()}
        names = list(d.configs or counts)
        unknown = [c for c in names if c not in counts]
        if unknown:
            raise VlmrobustError(f"suite {suite.name} dataset {d.name}: {path} has no config "
                                 f"{unknown[0]!r} (configs: {', '.join(counts)})")
        built = str(manifest.get("spec", {}).get("name", ""))
        if built != d.name:
            raise VlmrobustError(f"suite {suite.name} dataset {d.name}: {path} is the build of "
                                 f"{built!r}; point the suite at a {d.name} build")
        all_configs.update(names)
        if configs:
            names = [c for c in names if c in configs]
            if not names:
                continue
        entries.append(PlanEntry(d, reader, path, tuple(names), tuple(counts[c] for c in names),
                                 fingerprint=str(manifest.get("fingerprint", "")),
                                 version=str(manifest.get("spec", {}).get("version", ""))))
    _check_filter(configs, sorted(all_configs), "configs", suite.name)
    return Plan(suite, model, family, tuple(entries))


def describe_plan(plan: Plan, limit: int | None) -> list[str]:
    """The plan as printed lines: one per config run, one per skipped dataset, and
    the total row count."""
    lines = [f"suite {plan.suite.name} v{plan.suite.version}: {plan.model} ({plan.family})"]
    for e in plan.entries:
        if e.skip is not None:
            lines.append(f"  skip {e.name}: {e.skip}")
            continue
        how = ", ".join(f"{k} {v}" for k, v in (("mode", e.reader.mode), ("prompt", e.reader.prompt),
                                                ("class order", e.reader.class_order)) if v)
        lines.append(f"  {e.name} ({e.path}; {how or 'default reader'})")
        for c, n in zip(e.configs, e.rows, strict=True):
            lines.append(f"    {c}: {n if limit is None else min(n, limit)} rows")
    total = sum(e.rows_run(limit) for e in plan.runnable)
    lines.append(f"{len(plan.runnable)} datasets, {sum(len(e.configs) for e in plan.runnable)} "
                 f"configs, {total} rows" + (f" (--limit {limit}: partial)" if limit else ""))
    return lines
