"""Fresh virtual environments holding the vlmrobust wheel, made offline.

``make_light_venv``: no extras.
The core dependencies (and theirs, markers and requested extras evaluated) are
linked in from the environment running the tests, one distribution at a time, so
the light venv holds exactly the closure of ``vlmrobust``'s core requirements and
nothing else: no torch, no nltk, no faiss. The checkout itself is installed
non-editable with pip. ``make_full_venv``: the wheel over every dependency of
``[all]`` as installed in the environment running the tests. The wheel is built
from a copy of the sources (``build_wheel``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from importlib import metadata
from pathlib import Path
from typing import Any

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


def _requirements(dist: metadata.Distribution, extras: frozenset[str]) -> list[Requirement]:
    out = []
    for text in dist.requires or ():
        req = Requirement(text)
        if req.marker is None:
            out.append(req)
            continue
        for extra in ("", *sorted(extras)):
            if req.marker.evaluate({**default_environment(), "extra": extra}):
                out.append(req)
                break
    return out


def core_closure(root: str = "vlmrobust") -> dict[str, metadata.Distribution]:
    """Installed distributions needed by ``root`` without extras, by canonical name."""
    seen: dict[str, metadata.Distribution] = {}
    todo: list[tuple[str, frozenset[str]]] = [(root, frozenset())]
    done: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, extras = todo.pop()
        key = (canonicalize_name(name), extras)
        if key in done:
            continue
        done.add(key)
        dist = metadata.distribution(name)
        if canonicalize_name(name) != canonicalize_name(root):
            seen[canonicalize_name(name)] = dist
        for req in _requirements(dist, extras):
            todo.append((req.name, frozenset(req.extras)))
    return seen


def _top_level_entries(dist: metadata.Distribution) -> set[str]:
    entries = set()
    for f in dist.files or ():
        parts = Path(str(f)).parts
        if parts and parts[0] != ".." and parts[0] != "__pycache__":
            entries.add(parts[0])
    return entries


def _pyproject(checkout: Path) -> dict[str, Any]:
    import tomllib

    return tomllib.loads((checkout / "pyproject.toml").read_text(encoding="utf-8"))


def package_dirs(checkout: Path) -> dict[str, Path]:
    """pyproject's ``package-dir`` mapping: import name -> source folder."""
    mapping = _pyproject(checkout)["tool"]["setuptools"]["package-dir"]
    return {name: checkout / folder for name, folder in mapping.items()}


def source_packages(checkout: Path) -> dict[str, Path]:
    """Every package of the source tree by import name: each folder holding
    Python files under a mapped folder (a folder with .py files but no
    ``__init__.py`` counts too, so that a forgotten ``__init__`` is noticed)."""
    dirs = package_dirs(checkout)
    found: dict[str, Path] = {}
    for name, root in dirs.items():
        for py in root.rglob("*.py"):
            if "__pycache__" in py.parts:
                continue
            rel = py.parent.relative_to(root).parts
            dotted = ".".join((name, *rel))
            # a folder mapped on its own (vlmrobust.builders) wins over vlmrobust/builders
            owner = max((n for n in dirs if dotted == n or dotted.startswith(n + ".")), key=len)
            if owner == name:
                found[dotted] = py.parent
    return found


def listed_packages(checkout: Path) -> list[str]:
    return list(_pyproject(checkout)["tool"]["setuptools"]["packages"])


def source_modules(checkout: Path) -> set[str]:
    """Wheel-relative paths (``vlmrobust/builders/convert/tsv.py``) of every
    Python file the source tree holds."""
    out = set()
    for name, folder in source_packages(checkout).items():
        for py in folder.glob("*.py"):
            out.add("/".join(name.split(".")) + "/" + py.name)
    return out


def build_wheel(checkout: Path, where: Path) -> Path:
    """Build the wheel from a copy of the sources (setuptools writes build/ and
    egg-info beside the sources: never into the checkout under test)."""
    src = where / "src"
    src.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    for entry in ("pyproject.toml", "README.md"):
        shutil.copy2(checkout / entry, src / entry)
    for folder in {p.relative_to(checkout).parts[0] for p in package_dirs(checkout).values()}:
        shutil.copytree(checkout / folder, src / folder, ignore=ignore)
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    wheels = where / "wheels"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                        "--no-build-isolation", "--no-index", "-w", str(wheels), str(src)],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"pip wheel failed:\n{r.stderr[-3000:]}")
    (wheel,) = wheels.glob("vlmrobust-*.whl")
    return wheel


def _new_venv(where: Path, dep_paths: list[Path]) -> Path:
    env_dir = where / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    # A path listed in a .pth is added to sys.path after the venv's own
    # site-packages, and the .pth files inside it are not run: an editable
    # install living there stays invisible.
    Path(site, "zz_deps.pth").write_text("".join(f"{p}\n" for p in dep_paths), encoding="utf-8")
    return python


def install_wheel(python: Path, wheel: Path) -> None:
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                    "--no-deps", "--no-index", str(wheel)],
                   check=True, capture_output=True, text=True, env=env)


def make_light_venv(where: Path, checkout: Path, wheel: Path | None = None) -> Path:
    """A venv under ``where`` holding the wheel and only the core closure;
    returns its python."""
    deps = where / "deps"
    deps.mkdir(parents=True)
    for dist in core_closure().values():
        base = Path(str(dist.locate_file("")))
        for entry in _top_level_entries(dist):
            src = base / entry
            if src.exists() and not (deps / entry).exists():
                (deps / entry).symlink_to(src)
    python = _new_venv(where, [deps])
    install_wheel(python, wheel or build_wheel(checkout, where))
    return python


def make_full_venv(where: Path, wheel: Path) -> Path:
    """A venv under ``where`` holding the wheel, with every dependency of
    ``[all]`` seen from the environment running the tests (its site-packages,
    where they are installed); returns its python."""
    site = Path(sysconfig.get_paths()["purelib"])
    # and any site-packages the running one reaches through a .pth (a venv
    # layered over another's packages, as a git worktree's may be)
    extra = [Path(p) for p in sys.path if p.endswith("site-packages") and Path(p) != site]
    python = _new_venv(where, [site, *extra])
    install_wheel(python, wheel)
    return python
