"""Declarative, versioned benchmark specs: one YAML per published dataset family.

``resolve_spec("imagenet-mcq")`` finds benchmarks/imagenet-mcq.yaml; a path to
any YAML file works too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vlmrobust.core.errors import SpecError

# the shipped specs are under 5 KB
MAX_SPEC_BYTES = 1 << 20

SPEC_DIR = Path(__file__).resolve().parent


def available_specs() -> list[str]:
    return sorted(p.stem for p in SPEC_DIR.glob("*.yaml"))


def resolve_spec(name_or_path: str) -> Path:
    """The spec file ``name_or_path`` names: a .yaml/.yml path as given; else a
    registered name (benchmarks/<name>.yaml), even when the working folder holds
    something of that name (a folder ``ood`` is never the ``ood`` spec); else an
    existing file. A directory is never a spec."""
    candidate = Path(name_or_path)
    if candidate.suffix in {".yaml", ".yml"}:
        if candidate.is_dir():
            raise SpecError(f"spec {candidate} is a directory, not a YAML file; pass the spec "
                            "file inside it, or a registered spec name")
        if not candidate.is_file():
            _refuse_special(candidate)
            raise SpecError(f"spec file {candidate} does not exist")
        return candidate
    if name_or_path in available_specs():
        return SPEC_DIR / f"{name_or_path}.yaml"
    if candidate.is_file():
        return candidate
    _refuse_special(candidate)
    import difflib

    close = difflib.get_close_matches(name_or_path, available_specs(), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    what = (f"{name_or_path!r} is a directory, not a spec file, and no registered spec has "
            "that name" if candidate.is_dir() else f"unknown benchmark spec {name_or_path!r}")
    raise SpecError(f"{what}{hint} (known: {', '.join(available_specs())}; or pass a YAML path)")


def _refuse_special(path: Path) -> None:
    """Refuse a path that exists but is neither a regular file nor a folder (a
    FIFO, a device, a socket) by what it is; stat only, so a FIFO never blocks."""
    import stat

    from vlmrobust.core.files.output_guard import kind_of

    try:
        mode = path.stat().st_mode
    except (OSError, ValueError):
        return  # absent: the caller says so
    if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        raise SpecError(f"spec {path} is {kind_of(mode)}, not a regular file; pass a YAML "
                        "spec file or a registered spec name")


def load_spec_yaml(path: Path) -> dict[str, Any]:
    from vlmrobust.core.files.bounded import read_yaml_bounded

    # bounded and checked: a spec that is not UTF-8, nests past the recursion
    # limit or expands aliases without end is one line, never a traceback
    data = read_yaml_bounded(path, MAX_SPEC_BYTES, "benchmark spec", SpecError)
    if not isinstance(data, dict):
        raise SpecError(f"{path}: a spec must be a YAML mapping with 'family', 'name', 'version'")
    for key in ("family", "name", "version"):
        if key not in data:
            raise SpecError(f"{path}: missing required key {key!r}")
    return data
