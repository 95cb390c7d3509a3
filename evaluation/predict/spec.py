"""What one prediction run is: a frozen :class:`RunSpec` (model, dataset,
output, configs, how the model is read, how it runs), checked once when it is
built, so that every option is refused in one line before any file or model is
touched. ``vlmrobust predict``, ``vlmrobust eval`` and the Python API build it;
:func:`vlmrobust.evaluation.predict.dataset.predict_dataset` runs it.

>>> spec = RunSpec("classifier:efficientnet-lite0", "data/mcq", "p.parquet", configs="a, b")
>>> spec.configs, spec.config_arg, spec.backend.batch_size
(('a', 'b'), 'a,b', 16)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from vlmrobust.core.cpus import check_threads
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models.base import Adapter
from vlmrobust.models.readers.base import ReadOptions
from vlmrobust.models.readers.label_space import CLASS_ORDERS

OUT_SUFFIXES = (".parquet", ".jsonl")
MAX_NAME_CHARS = 300


@dataclass(frozen=True)
class ReaderOptions:
    """How the model is asked and its answer read: ``prompt`` (a prompt id, or
    a CLIP template with ``{option}``), a vlm's answer ``mode`` (letter,
    likelihood:sum|avg|cfg=T, generate, open-world), ``read_options`` (the
    generating modes' limits) and ``class_order`` (fixed | random: a label
    space's class names in a closed-world prompt). None: the seed's protocol."""

    prompt: str | None = None
    mode: str | None = None
    read_options: ReadOptions | None = None
    class_order: str | None = None

    def __post_init__(self) -> None:
        for flag, value in (("--prompt", self.prompt), ("--mode", self.mode)):
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise VlmrobustError(f"{flag} {value!r}: give a non-blank name")
        if self.read_options is not None and not isinstance(self.read_options, ReadOptions):
            raise VlmrobustError(f"read_options {self.read_options!r}: give a ReadOptions")
        if self.class_order is not None and self.class_order not in CLASS_ORDERS:
            raise VlmrobustError(f"--class-order {self.class_order!r}: use one of "
                                 f"{', '.join(CLASS_ORDERS)}")


@dataclass(frozen=True)
class BackendOptions:
    """Where and how the model runs: rows per batch, the torch ``device`` or a
    ``device_map`` sharding a vlm over every visible GPU (not both), torch CPU
    ``threads`` (None: chosen once per run), ``trust_remote_code`` (a vlm
    checkpoint's own modelling code) and an ``endpoint:`` model's connection
    options (``url``, ``api_key_env``, ``concurrency``, ``timeout_s``, ...,
    checked by the endpoint backend). ``eval`` shares them across a suite."""

    batch_size: int = 16
    device: str | None = None
    device_map: str | None = None
    threads: int | None = None
    trust_remote_code: bool = False
    endpoint: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.batch_size, bool) or not isinstance(self.batch_size, int) \
                or self.batch_size < 1:
            raise VlmrobustError(f"--batch-size must be >= 1, got {self.batch_size!r}")
        if self.threads is not None:
            check_threads(self.threads)
        if self.device_map is not None and self.device is not None:
            raise VlmrobustError("--device-map places the model on every visible device; "
                                 "drop --device (or --device-map)")
        if self.endpoint is not None:
            if not isinstance(self.endpoint, Mapping):
                raise VlmrobustError(f"endpoint {self.endpoint!r}: give a mapping of options")
            # a read-only copy: the caller's dict cannot change a built spec
            object.__setattr__(self, "endpoint", MappingProxyType(dict(self.endpoint)))


@dataclass(frozen=True)
class RunSpec:
    """One prediction run. ``model``: an adapter name (``classifier:...``,
    ``clip:...``, ``vlm:...``, ``endpoint:...``) or a loaded adapter;
    ``dataset``: a dataset folder or hub id; ``out``: the predictions file
    (.parquet, or .jsonl with a ``.meta.yaml`` sidecar); ``configs``: the
    configs read (None: all, in manifest order; a string is split at commas);
    ``limit``: the first rows of each config (a partial run); ``name``: the
    model's public name in the metadata (without it no local path of the model
    is recorded); ``overwrite``: discard an unfinished run's journal instead of
    resuming it; ``progress``: show a progress bar."""

    model: str | Adapter
    dataset: str | Path
    out: Path
    configs: tuple[str, ...] | None = None
    limit: int | None = None
    name: str | None = None
    reader: ReaderOptions = field(default_factory=ReaderOptions)
    backend: BackendOptions = field(default_factory=BackendOptions)
    overwrite: bool = False
    progress: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.model, str):
            if not self.model.strip():
                raise VlmrobustError("--model: give a model name (FAMILY:MODEL)")
        elif not (hasattr(self.model, "name") and hasattr(self.model, "family")):
            raise VlmrobustError(f"model {self.model!r}: give an adapter name or a loaded adapter")
        if not isinstance(self.dataset, (str, Path)) or not str(self.dataset).strip():
            raise VlmrobustError(f"--dataset {self.dataset!r}: give a dataset folder or hub id")
        out = Path(self.out)
        if out.suffix not in OUT_SUFFIXES:
            raise VlmrobustError(f"--out {out}: use a .parquet (or .jsonl) file name")
        object.__setattr__(self, "out", out)
        object.__setattr__(self, "configs", _config_names(self.configs))
        if self.limit is not None and (isinstance(self.limit, bool)
                                       or not isinstance(self.limit, int) or self.limit < 1):
            raise VlmrobustError(f"--limit must be >= 1, got {self.limit!r}")
        if self.name is not None and (not isinstance(self.name, str) or not self.name.strip()
                                      or len(self.name) > MAX_NAME_CHARS):
            raise VlmrobustError(f"--name must be 1-{MAX_NAME_CHARS} characters, not blank")
        for part, kind in (("reader", ReaderOptions), ("backend", BackendOptions)):
            if not isinstance(getattr(self, part), kind):
                raise VlmrobustError(f"{part} {getattr(self, part)!r}: give a {kind.__name__}")

    @property
    def config_arg(self) -> str | None:
        """The configs as ``--config`` spells them (comma-separated; None: all)."""
        return None if self.configs is None else ",".join(self.configs)

    @classmethod
    def from_keywords(cls, model: str | Adapter, dataset: str | Path, out: str | Path,
                      **options: Any) -> RunSpec:
        """A spec from the flat keywords ``predict_dataset`` took before the run
        spec (``config``, ``batch_size``, ``device``, ``limit``, ``progress``,
        ``prompt``, ``threads``, ``overwrite``, ``trust_remote_code``, ``mode``,
        ``read_options``, ``device_map``, ``endpoint``, ``name``,
        ``class_order``), each sorted into its sub-record.

        >>> RunSpec.from_keywords("m:x", "d", "p.jsonl", batch_size=2, mode="letter").reader.mode
        'letter'
        """
        unknown = sorted(set(options) - set(_FLAT_KEYWORDS))
        if unknown:
            raise VlmrobustError(f"predict_dataset: unknown option {unknown[0]!r} (options: "
                                 f"{', '.join(_FLAT_KEYWORDS)})")
        parts: dict[str, dict[str, Any]] = {"run": {}, "reader": {}, "backend": {}}
        for key, value in options.items():
            part, name = _FLAT_KEYWORDS[key]
            parts[part][name] = value
        return cls(model, dataset, Path(out), reader=ReaderOptions(**parts["reader"]),
                   backend=BackendOptions(**parts["backend"]), **parts["run"])


# predict_dataset's keywords before the run spec, in their old positional order:
# keyword -> (record, field)
_FLAT_KEYWORDS: dict[str, tuple[str, str]] = {
    "config": ("run", "configs"), "batch_size": ("backend", "batch_size"),
    "device": ("backend", "device"), "limit": ("run", "limit"),
    "progress": ("run", "progress"), "prompt": ("reader", "prompt"),
    "threads": ("backend", "threads"), "overwrite": ("run", "overwrite"),
    "trust_remote_code": ("backend", "trust_remote_code"), "mode": ("reader", "mode"),
    "read_options": ("reader", "read_options"), "device_map": ("backend", "device_map"),
    "endpoint": ("backend", "endpoint"), "name": ("run", "name"),
    "class_order": ("reader", "class_order"),
}


def _config_names(configs: Any) -> tuple[str, ...] | None:
    """``configs`` as a tuple of names: a string is split at commas, as
    ``--config a,b`` is (repeats are dropped when the dataset's configs are read)."""
    if configs is None:
        return None
    if isinstance(configs, str):
        names = tuple(c.strip() for c in configs.split(",") if c.strip())
    elif isinstance(configs, (list, tuple)) and all(isinstance(c, str) for c in configs):
        names = tuple(c.strip() for c in configs)
    else:
        raise VlmrobustError(f"--config {configs!r}: give config names (a string or a list)")
    if not names or not all(names):
        raise VlmrobustError(f"--config {configs!r}: name at least one config (None: all)")
    return names
