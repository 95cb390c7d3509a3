"""The README's install line, run verbatim in a fresh venv beside a clone (issue
40.2): nothing but that line, then the CLI works from the installed package.

Tests never touch the network, so the index is replaced by what is already
installed: the venv sees the core dependencies (and the build backend, which an
isolated build would download) through a .pth, with ``PIP_NO_INDEX`` set. The
line itself, taken from the README, is what runs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import venv
from importlib import metadata
from pathlib import Path

import pytest
import tomllib

from tests.fixtures.light_env import _top_level_entries, core_closure

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"


def _install_block() -> list[str]:
    text = README.read_text(encoding="utf-8")
    start = text.index("### Install")
    block = text[start:text.index("```\n", text.index("```bash", start) + 7)]
    return [ln.split("#")[0].strip() for ln in block.splitlines() if ln.strip().startswith("pip install")]


def test_every_install_line_names_an_extra_pyproject_defines() -> None:
    extras = set(tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]["optional-dependencies"])
    lines = _install_block()
    assert lines[0] == "pip install './vlmrobust'", lines
    for line in lines[1:]:
        named = re.fullmatch(r"pip install './vlmrobust\[(\w+)\]'", line)
        assert named and named.group(1) in extras, (line, sorted(extras))


def _clone(dest: Path) -> None:
    """What `git clone` gives: the tracked files of the checkout."""
    tracked = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], check=True,
                             capture_output=True).stdout.decode().split("\0")
    for rel in filter(None, tracked):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


@pytest.mark.slow
def test_readme_install_line_works_in_a_fresh_venv(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    line = _install_block()[0]
    _clone(tmp_path / "vlmrobust")
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    # the build backend pyproject asks for (setuptools>=68) in place of the one
    # ensurepip bundles; the index would have supplied it
    subprocess.run([str(python), "-m", "pip", "uninstall", "-q", "-y", "setuptools"], capture_output=True)
    deps = tmp_path / "deps"
    deps.mkdir()
    dists = [*core_closure().values(), metadata.distribution("setuptools")]
    for dist in dists:
        base = Path(str(dist.locate_file("")))
        for entry in _top_level_entries(dist):
            if (base / entry).exists() and not (deps / entry).exists():
                (deps / entry).symlink_to(base / entry)
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "zz_deps.pth").write_text(f"{deps}\n", encoding="utf-8")
    env = {**os.environ, "PATH": f"{env_dir / 'bin'}:{os.environ['PATH']}", "PIP_NO_INDEX": "1",
           "PIP_NO_BUILD_ISOLATION": "0", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "VIRTUAL_ENV": str(env_dir)}
    env.pop("PYTHONPATH", None)
    r = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    work = tmp_path / "elsewhere"
    work.mkdir()
    where = subprocess.run([str(python), "-c", "import vlmrobust; print(vlmrobust.__file__)"], cwd=work, env=env,
                           check=True, capture_output=True, text=True).stdout.strip()
    assert where.startswith(site), where
    r = subprocess.run([str(env_dir / "bin" / "vlmrobust"), "validate", "--help"], cwd=work, env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0 and "--predictions" in r.stdout, r.stderr[-2000:]
    ex = REPO / "submissions"
    r = subprocess.run([str(env_dir / "bin" / "vlmrobust"), "validate", "--dataset", str(ex / "datasets" / "imagenet-mcq"),
                        "--predictions", str(ex / "efficientnet-lite0" / "imagenet-mcq" / "predictions.parquet")],
                       cwd=work, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert sys.prefix not in where
