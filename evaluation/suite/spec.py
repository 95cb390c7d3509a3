"""Suites as data: ``benchmarks/suites/<name>.yaml`` lists the datasets a model
is taken through by ``vlmrobust eval`` and, per model family, how each is read.

    name: sample
    version: "1.0.0"
    datasets:
      - {name: imagenet-mcq, store: imagenet-mcq}         # a folder of the dataset store
      - {name: bench-c, path: ../builds/bench-c}           # a local folder (relative to the suite)
      - {name: ood, hub: vlmrobust/ood, revision: v1.0.0}  # a hub dataset at a tag (benchmarks/hub_names.py)
      - {name: failure-discovery, store: failure-discovery, configs: [mcq]}
    readers:
      vlm:
        imagenet-mcq: {mode: letter, prompt: what-type}
        retrieval: {skip: "a vlm gives no embeddings"}

``load_suite`` reads it bounded (as the benchmark specs are read) into frozen
dataclasses; every problem is one line naming the file and the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlmrobust.benchmarks import MAX_SPEC_BYTES, SPEC_DIR
from vlmrobust.core.errors import SpecError

SUITE_DIR = SPEC_DIR / "suites"
_DATASET_KEYS = {"name", "store", "path", "hub", "revision", "configs"}
_READER_KEYS = {"mode", "prompt", "class_order", "skip"}
_TOP_KEYS = {"name", "version", "description", "datasets", "readers"}
CLASS_ORDERS = ("fixed", "random")


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SpecError(f"{where}: expected a non-empty string, got {value!r}")
    return value


@dataclass(frozen=True)
class SuiteDataset:
    """One dataset of a suite: where it is (exactly one of store, path, hub) and
    which configs run (None: every config of the build)."""

    name: str
    store: str | None = None
    path: Path | None = None
    hub: str | None = None
    revision: str | None = None
    configs: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        where = f"dataset {self.name!r}"
        given = [k for k in ("store", "path", "hub") if getattr(self, k) is not None]
        if len(given) != 1:
            raise SpecError(f"{where}: give exactly one of store, path, hub (got "
                            f"{', '.join(given) or 'none'})")
        if self.store is not None and ("/" in self.store or self.store.startswith(".")):
            raise SpecError(f"{where}: store {self.store!r} must be one folder name")
        if self.hub is not None and (self.revision is None or self.hub.count("/") != 1):
            raise SpecError(f"{where}: hub needs OWNER/NAME and a revision (a tag such as "
                            "v1.0.0), so that a suite version pins its data")
        if self.revision is not None and self.hub is None:
            raise SpecError(f"{where}: revision applies to hub datasets only")
        if self.configs is not None and not self.configs:
            raise SpecError(f"{where}: configs is empty; omit it to run every config")

    def where(self) -> str:
        if self.store is not None:
            return f"store:{self.store}"
        if self.hub is not None:
            return f"hub:{self.hub}@{self.revision}"
        return str(self.path)


@dataclass(frozen=True)
class ReaderChoice:
    """How one model family reads one dataset: a vlm answer mode, a prompt id and
    a closed-world class order (None: the reader's default, the seed's protocol),
    or ``skip`` with the reason."""

    mode: str | None = None
    prompt: str | None = None
    class_order: str | None = None
    skip: str | None = None

    def __post_init__(self) -> None:
        if self.skip is not None and (self.mode, self.prompt, self.class_order) != (None,) * 3:
            raise SpecError("skip excludes mode, prompt and class_order")
        if self.class_order is not None and self.class_order not in CLASS_ORDERS:
            raise SpecError(f"class_order {self.class_order!r}: use one of {', '.join(CLASS_ORDERS)}")


@dataclass(frozen=True)
class Suite:
    """A named, versioned list of datasets and the readers per model family."""

    name: str
    version: str
    datasets: tuple[SuiteDataset, ...]
    readers: Mapping[str, Mapping[str, ReaderChoice]]
    description: str = ""
    path: Path | None = None

    def __post_init__(self) -> None:
        names = [d.name for d in self.datasets]
        if not names:
            raise SpecError("datasets: a suite lists at least one dataset")
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise SpecError(f"datasets: {', '.join(dup)} listed twice")
        for family, per in self.readers.items():
            unknown = sorted(set(per) - set(names))
            if unknown:
                raise SpecError(f"readers.{family}: {', '.join(unknown)} is not in datasets "
                                f"(datasets: {', '.join(names)})")

    def reader(self, family: str, dataset: str) -> ReaderChoice:
        """The reader of ``dataset`` for a ``family`` model; a skip with the reason
        when the suite gives that family none."""
        per = self.readers.get(family)
        if per is None:
            return ReaderChoice(skip=f"suite {self.name} gives {family}: models no readers")
        return per.get(dataset) or ReaderChoice(
            skip=f"suite {self.name} gives {family}: models no reader for {dataset}")


def available_suites() -> list[str]:
    return sorted(p.stem for p in SUITE_DIR.glob("*.yaml"))


def resolve_suite(name_or_path: str) -> Path:
    """A .yaml/.yml path as given, else the registered suite of that name."""
    candidate = Path(name_or_path)
    if candidate.suffix in {".yaml", ".yml"}:
        if not candidate.is_file():
            raise SpecError(f"suite file {candidate} does not exist (or is not a file)")
        return candidate
    if name_or_path in available_suites():
        return SUITE_DIR / f"{name_or_path}.yaml"
    import difflib

    close = difflib.get_close_matches(name_or_path, available_suites(), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise SpecError(f"unknown suite {name_or_path!r}{hint} (known: "
                    f"{', '.join(available_suites())}; or pass a YAML path)")


def _dataset(raw: Any, i: int, base: Path, where: str) -> SuiteDataset:
    at = f"{where}: datasets[{i}]"
    if not isinstance(raw, Mapping):
        raise SpecError(f"{at}: expected a mapping with name and one of store, path, hub")
    unknown = sorted(set(raw) - _DATASET_KEYS)
    if unknown:
        raise SpecError(f"{at}: unknown key {unknown[0]!r} (keys: {', '.join(sorted(_DATASET_KEYS))})")
    name = _text(raw.get("name"), f"{at}.name")
    at = f"{where}: dataset {name!r}"
    fields: dict[str, Any] = {k: _text(raw[k], f"{at}.{k}") for k in ("store", "hub", "revision")
                              if raw.get(k) is not None}
    if raw.get("path") is not None:
        path = Path(_text(raw["path"], f"{at}.path"))
        fields["path"] = path if path.is_absolute() else base / path
    configs = raw.get("configs")
    if configs is not None and configs != "all":
        if not isinstance(configs, list):
            raise SpecError(f"{at}.configs: expected a list of config names or 'all'")
        fields["configs"] = tuple(_text(c, f"{at}.configs") for c in configs)
    try:
        return SuiteDataset(name=name, **fields)
    except SpecError as exc:
        raise SpecError(f"{where}: {exc}") from None


def _readers(raw: Any, where: str) -> dict[str, dict[str, ReaderChoice]]:
    import vlmrobust.models.registration  # noqa: F401  (fills the family registry)
    from vlmrobust.models.base import ADAPTER_FAMILIES

    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise SpecError(f"{where}: readers: expected a mapping of model family -> datasets")
    out: dict[str, dict[str, ReaderChoice]] = {}
    for family, per in raw.items():
        if family not in ADAPTER_FAMILIES:
            raise SpecError(f"{where}: readers.{family}: unknown model family (known: "
                            f"{', '.join(ADAPTER_FAMILIES)})")
        if not isinstance(per, Mapping):
            raise SpecError(f"{where}: readers.{family}: expected a mapping of dataset -> reader")
        out[family] = {}
        for dataset, choice in per.items():
            at = f"{where}: readers.{family}.{dataset}"
            choice = {} if choice is None else choice
            if not isinstance(choice, Mapping):
                raise SpecError(f"{at}: expected a mapping (mode, prompt, class_order or skip)")
            unknown = sorted(set(choice) - _READER_KEYS)
            if unknown:
                raise SpecError(f"{at}: unknown key {unknown[0]!r} (keys: "
                                f"{', '.join(sorted(_READER_KEYS))})")
            values = {k: _text(v, f"{at}.{k}") for k, v in choice.items() if v is not None}
            try:
                out[family][str(dataset)] = ReaderChoice(**values)
            except SpecError as exc:
                raise SpecError(f"{at}: {exc}") from None
            if "mode" in values:
                _check_mode(values["mode"], family, at)
    return out


def _check_mode(mode: str, family: str, at: str) -> None:
    """A typo in a mode fails when the suite loads, not after hours of other datasets."""
    from vlmrobust.core.errors import VlmrobustError
    from vlmrobust.models.readers import parse_mode

    if family not in ("vlm", "endpoint"):
        raise SpecError(f"{at}.mode: answer modes apply to vlm and endpoint models, not {family}")
    try:
        parse_mode(mode, None)
    except VlmrobustError as exc:
        raise SpecError(f"{at}.mode: {exc}") from None


def load_suite(name_or_path: str) -> Suite:
    """The suite ``name_or_path`` names (benchmarks/suites/<name>.yaml or a YAML
    path), validated."""
    from vlmrobust.core.files.bounded import read_yaml_bounded

    path = resolve_suite(name_or_path)
    where = str(path)
    raw = read_yaml_bounded(path, MAX_SPEC_BYTES, "suite", SpecError)
    if not isinstance(raw, Mapping):
        raise SpecError(f"{where}: a suite is a YAML mapping with name, version, datasets, readers")
    unknown = sorted(set(raw) - _TOP_KEYS)
    if unknown:
        raise SpecError(f"{where}: unknown key {unknown[0]!r} (keys: {', '.join(sorted(_TOP_KEYS))})")
    name = _text(raw.get("name"), f"{where}: name")
    version = raw.get("version")
    if not isinstance(version, (str, int, float)) or isinstance(version, bool) or not str(version):
        raise SpecError(f"{where}: version: expected a version string such as \"1.0.0\"")
    datasets = raw.get("datasets")
    if not isinstance(datasets, list):
        raise SpecError(f"{where}: datasets: expected a list of datasets")
    items = tuple(_dataset(d, i, path.parent, where) for i, d in enumerate(datasets))
    readers = _readers(raw.get("readers"), where)
    description = raw.get("description") or ""
    try:
        return Suite(name=name, version=str(version), datasets=items, readers=readers,
                     description=str(description), path=path)
    except SpecError as exc:
        raise SpecError(f"{where}: {exc}") from None
