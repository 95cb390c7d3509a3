"""The import-linter contracts (pyproject [tool.importlinter]) hold, and they
would catch a planted import that runs the wrong way (issue 11), between
sub-packages that must stay independent, or that closes a circle through an
import inside a function (issue 38.4)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.import_graph import installed_layout

REPO = Path(__file__).resolve().parents[2]

pytest.importorskip("importlinter")


def _lint(target: Path) -> subprocess.CompletedProcess[str]:
    code = ("import sys\nfrom importlinter.cli import lint_imports_command\n"
            "sys.argv[0] = 'lint-imports'\nsys.exit(lint_imports_command())")
    env = {**os.environ, "PYTHONPATH": str(target)}
    return subprocess.run([sys.executable, "-c", code, "--config", str(REPO / "pyproject.toml"),
                           "--no-cache"], cwd=target, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture()
def layout(tmp_path: Path) -> Path:
    return installed_layout(tmp_path / "site")


def test_contracts_are_kept(layout: Path) -> None:
    import tomllib  # Python 3.11+, as tests/fixtures/light_env.py reads pyproject

    contracts = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    n = len(contracts["tool"]["importlinter"]["contracts"])
    assert n >= 10
    r = _lint(layout)
    assert r.returncode == 0, r.stdout[-3000:]
    assert f"{n} kept, 0 broken" in r.stdout


def test_a_circle_through_a_lazy_import_breaks_the_contract(layout: Path) -> None:
    # core.datadir reads core.layout's names; a layout function importing datadir
    # closes a circle even though it runs only when called
    with open(layout / "vlmrobust/core/layout.py", "a", encoding="utf-8") as f:
        f.write("\n\ndef _planted():\n    from vlmrobust.core import datadir  # noqa\n")
    r = _lint(layout)
    assert r.returncode != 0
    assert "No cycles are allowed in vlmrobust.core" in " ".join(r.stdout.split())


@pytest.mark.parametrize(("where", "line", "message"), [
    ("vlmrobust/core/_planted.py", "import vlmrobust.cli.main\n",
     "vlmrobust.core is not allowed to import vlmrobust.cli"),
    ("vlmrobust/evaluation/_planted.py", "from vlmrobust.builders import families\n",
     "vlmrobust.evaluation is not allowed to import vlmrobust.builders"),
    ("vlmrobust/metrics/_planted.py", "import vlmrobust.models.base\n",
     "vlmrobust.metrics is not allowed to import vlmrobust.models"),
    ("vlmrobust/models/_planted.py", "import vlmrobust.builders.wordnet\n",
     "vlmrobust.models is not allowed to import vlmrobust.builders"),
    ("vlmrobust/models/clip/_planted.py", "from vlmrobust.models.classifiers import adapter\n",
     "vlmrobust.models.clip is not allowed to import vlmrobust.models.classifiers"),
    ("vlmrobust/metrics/lines/_planted.py", "import vlmrobust.metrics.holistic\n",
     "vlmrobust.metrics.lines is not allowed to import vlmrobust.metrics.holistic"),
    ("vlmrobust/evaluation/scoring/_planted.py", "import vlmrobust.evaluation.discover.sample\n",
     "vlmrobust.evaluation.scoring is not allowed to import vlmrobust.evaluation.discover"),
])
def test_planted_forbidden_import_breaks_the_contract(layout: Path, where: str, line: str,
                                                      message: str) -> None:
    (layout / where).write_text(line, encoding="utf-8")
    r = _lint(layout)
    assert r.returncode != 0
    assert message in " ".join(r.stdout.split())
