"""The wheel as a newcomer installs it (issue 27.1), light: built from the
sources, installed into a fresh venv with no extras, every CLI subcommand's
``--help`` and every happy path that needs no extra run from the installed
package in a temporary working directory, never from the checkout; the others
name their extra in one line. The full install: tests/project/test_full_wheel.py.

The editable install every other test uses hides a package left out of
pyproject's ``packages`` list (``vlmrobust.builders.convert`` once was): these
tests see it."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from tests.fixtures.light_env import listed_packages, source_modules, source_packages
from tests.fixtures.wheel_cli import (
    assert_installed_not_checkout,
    check_helps,
    check_light_outputs,
    cli,
    light_paths,
    ok,
)

REPO = Path(__file__).resolve().parents[2]
# One worker under xdist (--dist loadgroup) for every user of the session's
# wheel and its venvs: each is built once per worker.
pytestmark = pytest.mark.xdist_group("wheel")

# Commands that need an extra: without it they say which, in one line.
NEEDS_EXTRA = {"build": "build", "predict": "predict", "demo": "predict",
               "discover sample": "predict", "discover train": "discover",
               "discover taxonomy": "predict"}


def test_pyproject_lists_every_source_package() -> None:
    found = set(source_packages(REPO))
    listed = listed_packages(REPO)
    assert len(listed) == len(set(listed))
    assert sorted(found - set(listed)) == [], "add these to [tool.setuptools] packages"
    assert sorted(set(listed) - found) == [], "listed packages with no source folder"
    for name, folder in source_packages(REPO).items():
        assert (folder / "__init__.py").is_file(), f"{name}: {folder} lacks __init__.py"


def test_wheel_holds_every_source_module(vlmrobust_wheel: Path) -> None:
    names = set(zipfile.ZipFile(vlmrobust_wheel).namelist())
    missing = sorted(source_modules(REPO) - names)
    assert missing == [], f"modules missing from the wheel: {missing[:10]}"
    assert "vlmrobust/builders/convert/mcq.py" in names
    # nothing but vlmrobust at the top of site-packages
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"vlmrobust"}


def test_light_wheel_every_subcommand(light_python: Path, tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    assert_installed_not_checkout(light_python, cwd)
    paths = check_helps(light_python, cwd)
    happy = light_paths(tmp_path)
    keys = {" ".join(p) for p in paths}
    assert keys == set(happy) | set(NEEDS_EXTRA), "every subcommand needs a happy path here"
    for key, runs in happy.items():
        for args in runs:
            ok(cli(light_python, args, cwd), key)
    check_light_outputs(tmp_path)
    # the repository's example, as a fresh clone holds it: its dataset build ships with it
    example = tmp_path / "example"
    shutil.copytree(REPO / "submissions", example, ignore=shutil.ignore_patterns(".*"))
    ok(cli(light_python, ["leaderboard", "build", "--submissions", str(example), "--out",
                          str(tmp_path / "example-site"), "--quiet"], cwd), "example board")
    ds = tmp_path / "ds"
    # inputs and outputs apart: discover refuses an --out inside an input folder
    (tmp_path / "q").mkdir()
    for cmd, args in {
        "build": ["build", "imagenet-mcq", "--sample", "--limit", "1", "--out", str(tmp_path / "b")],
        "predict": ["predict", "--model", "classifier:efficientnet-lite0", "--dataset", str(ds),
                    "--out", str(tmp_path / "p.parquet")],
        "demo": ["demo", "--out", str(tmp_path / "demo")],
        "discover sample": ["discover", "sample", "--questioner", str(tmp_path / "q"), "--images",
                            str(tmp_path / "planted"), "--answerer", "rule:blind=count",
                            "--verifier", "rule:planted", "--out", str(tmp_path / "s.jsonl")],
        "discover train": ["discover", "train", "--questioner", str(tmp_path / "q"), "--images",
                           str(tmp_path / "planted"), "--answerer", "rule:blind=count",
                           "--verifier", "rule:planted", "--out", str(tmp_path / "grpo-run")],
        "discover taxonomy": ["discover", "taxonomy", str(tmp_path / "r.jsonl"), "--out",
                              str(tmp_path / "tax"), "--tagger", "rule:planted"],
    }.items():
        r = cli(light_python, args, cwd)
        assert r.returncode == 1 and "Traceback" not in r.stderr, (cmd, r.stderr[-2000:])
        line = r.stderr.strip().splitlines()[-1]
        assert line.startswith("error: ") and "pip install 'vlmrobust[" in line, (cmd, line)
