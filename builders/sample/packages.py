"""Where the embedded sample's source files are: installed PyPI modules, the
Debian install paths of the photo packages, the emoji fonts, and the pinned npm
emoji packages (fetched with ``npm pack`` or found unpacked in a folder)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import tarfile
from pathlib import Path

from vlmrobust.core.errors import SourceError

NPM_PACKAGES = {"@twemoji/svg": "15.0.0", "fluentui-emoji": "1.3.0"}
#: Where Debian installs the packages that photos come from.
DEBIAN_ROOTS = {
    "debian:opencv-doc": Path("/usr/share/doc/opencv-doc"),
    "debian:tuxpaint-stamps-default": Path("/usr/share/tuxpaint/stamps"),
}
NOTO_FONT = Path("/usr/share/fonts/truetype/noto/NotoColorEmoji.ttf")
SYMBOLA_FONT = Path("/usr/share/fonts/truetype/ancient-scripts/Symbola_hint.ttf")
PYPI_MODULES = {"scikit-image": "skimage", "scikit-learn": "sklearn", "matplotlib": "matplotlib"}


def module_root(package: str) -> Path:
    """The installed folder of a PyPI distribution's top-level module."""
    module = PYPI_MODULES.get(package, package.replace("-", "_"))
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise SourceError(
            f"{package} is not installed; `pip install {package}` (or the `sample` extra)"
        )
    return Path(spec.origin).parent


def package_root(package: str, debian_roots: dict[str, Path]) -> tuple[Path, str]:
    """(folder holding a photo table path, prefix recorded in origin_path)."""
    if package.startswith("debian:"):
        root = debian_roots.get(package, DEBIAN_ROOTS[package])
        if not root.is_dir():
            name = package.removeprefix("debian:")
            raise SourceError(f"{root}: not found; `apt-get install {name}`")
        return root, str(DEBIAN_ROOTS[package])
    root = module_root(package)
    return root, root.name


def npm_fetch(dest: Path) -> dict[str, Path]:
    """``npm pack`` the pinned emoji packages into ``dest`` and unpack them."""
    if shutil.which("npm") is None:
        raise SourceError(
            "npm not found; install Node.js/npm or pass --npm-dir with the unpacked packages"
        )
    out: dict[str, Path] = {}
    for name, version in NPM_PACKAGES.items():
        proc = subprocess.run(
            ["npm", "pack", f"{name}@{version}", "--silent"],
            cwd=dest,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise SourceError(
                f"npm pack {name}@{version} failed: {proc.stderr.strip().splitlines()[-1:]}"
            )
        tarball = dest / proc.stdout.strip().splitlines()[-1]
        target = dest / name.replace("/", "__")
        with tarfile.open(tarball) as tar:
            tar.extractall(target, filter="data")
        out[name] = target / "package"
    return out


def npm_from_dir(npm_dir: Path) -> dict[str, Path]:
    """Unpacked packages under ``npm_dir``: ``node_modules/<name>`` (npm
    install) or ``<name with / as __>/package`` (what ``npm_fetch`` leaves)."""
    out: dict[str, Path] = {}
    for name in NPM_PACKAGES:
        found = _first_dir(
            npm_dir / "node_modules" / name, npm_dir / name.replace("/", "__") / "package"
        )
        if found is None:
            raise SourceError(
                f"{npm_dir}: no unpacked {name}; `npm install {name}@{NPM_PACKAGES[name]}` there"
            )
        out[name] = found
    return out


def _first_dir(*candidates: Path) -> Path | None:
    return next((c for c in candidates if c.is_dir()), None)
