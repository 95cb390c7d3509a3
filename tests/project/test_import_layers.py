"""The import-linter layer contract (pyproject [tool.importlinter]) holds, and it
would catch a planted import that runs the wrong way (issue 11)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# The package-dir mapping of pyproject.toml, laid out as an installed package.
MAPPED = {"builders": "builders", "evaluation": "evaluation", "leaderboard": "leaderboard",
          "benchmarks": "benchmarks"}

pytest.importorskip("importlinter")


def _layout(target: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "images", "data", "*.csv")
    shutil.copytree(REPO / "vlmrobust", target / "vlmrobust", ignore=ignore)
    for sub, folder in MAPPED.items():
        shutil.copytree(REPO / folder, target / "vlmrobust" / sub, ignore=ignore)
    return target


def _lint(target: Path) -> subprocess.CompletedProcess[str]:
    code = ("import sys\nfrom importlinter.cli import lint_imports_command\n"
            "sys.argv[0] = 'lint-imports'\nsys.exit(lint_imports_command())")
    env = {**os.environ, "PYTHONPATH": str(target)}
    return subprocess.run([sys.executable, "-c", code, "--config", str(REPO / "pyproject.toml"),
                           "--no-cache"], cwd=target, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture()
def layout(tmp_path: Path) -> Path:
    return _layout(tmp_path / "site")


def test_contract_is_kept(layout: Path) -> None:
    r = _lint(layout)
    assert r.returncode == 0, r.stdout[-3000:]
    assert "1 kept, 0 broken" in r.stdout


@pytest.mark.parametrize(("where", "line", "message"), [
    ("vlmrobust/core/_planted.py", "import vlmrobust.cli.main\n",
     "vlmrobust.core is not allowed to import vlmrobust.cli"),
    ("vlmrobust/evaluation/_planted.py", "from vlmrobust.builders import families\n",
     "vlmrobust.evaluation is not allowed to import vlmrobust.builders"),
    ("vlmrobust/metrics/_planted.py", "import vlmrobust.models.base\n",
     "vlmrobust.metrics is not allowed to import vlmrobust.models"),
    ("vlmrobust/models/_planted.py", "import vlmrobust.builders.wordnet\n",
     "vlmrobust.models is not allowed to import vlmrobust.builders"),
])
def test_planted_forbidden_import_breaks_the_contract(layout: Path, where: str, line: str,
                                                      message: str) -> None:
    (layout / where).write_text(line, encoding="utf-8")
    r = _lint(layout)
    assert r.returncode != 0
    assert message in " ".join(r.stdout.split())
