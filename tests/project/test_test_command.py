"""The test command stays fast with nothing lost (issue 39 item 4): it runs on
pytest-xdist workers and prints the 15 slowest tests; what it leaves out (the
``slow`` mark) is listed in the README and run by ``tox -e slow``, which CI runs
after it; every user of a session fixture shares that fixture's worker."""

from __future__ import annotations

import ast
import configparser
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from tests.fixtures.workers import SESSION_GROUPS, THREAD_KEYS, WAIT_KEY, group_tag, worker_threads

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"


def _pytest_args(script: Path) -> list[str]:
    """The arguments of the script's (single) pytest invocation."""
    text = script.read_text(encoding="utf-8").replace("\\\n", " ")
    (line,) = [ln for ln in text.splitlines() if "-m pytest" in ln and not ln.lstrip().startswith("#")]
    args = shlex.split(line)
    return args[args.index("pytest") + 1:]


def test_test_command_runs_on_workers_and_prints_the_slowest() -> None:
    args = _pytest_args(REPO / "scripts" / "run-tests.sh")
    assert args[args.index("-n") + 1] == "2" and args[args.index("--dist") + 1] == "loadgroup"
    # the conftest's longest-first order is the order xdist hands out (test_test_schedule.py)
    assert "--no-loadscope-reorder" in args
    assert "--durations=15" in args
    assert args[args.index("-m") + 1] == "not slow"
    dev = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    assert any(re.match(r"pytest-xdist\b", d) for d in dev)


def test_ci_runs_what_the_test_command_leaves_out() -> None:
    ci = [ln.strip() for ln in (REPO / ".ci" / "run").read_text().splitlines()
          if ln.strip() and not ln.lstrip().startswith(("#", "set ", "cd "))]
    assert ci == ["bash scripts/run-tests.sh", ".venv/bin/tox -e slow"]
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(REPO / "tox.ini")
    assert tox["testenv:slow"]["commands"].split()[:2] == ["bash", "scripts/run-slow-tests.sh"]
    args = _pytest_args(REPO / "scripts" / "run-slow-tests.sh")
    assert args[args.index("-m") + 1] == "slow"


def _marks(node: ast.AST) -> list[str]:
    """Source of every pytest mark in ``node`` (a decorator list or an assignment)."""
    return [ast.unparse(n) for n in ast.walk(node)
            if isinstance(n, ast.Attribute | ast.Call) and "pytest.mark." in ast.unparse(n)]


def _module_marks(tree: ast.Module) -> list[str]:
    return [m for stmt in tree.body if isinstance(stmt, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in stmt.targets)
            for m in _marks(stmt.value)]


def _test_functions(tree: ast.Module) -> list[ast.FunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]


def _test_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("test_*.py") if "perf" not in p.relative_to(TESTS).parts)


def test_every_session_fixture_user_shares_its_worker() -> None:
    """A session fixture is built once per xdist worker: a test that uses one
    without the fixture's group may run on another worker and build it again."""
    missing, users = [], 0
    for path in _test_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module = _module_marks(tree)
        for fn in _test_functions(tree):
            marks = module + [m for d in fn.decorator_list for m in _marks(d)]
            for arg in (a.arg for a in fn.args.args):
                if arg in SESSION_GROUPS:
                    users += 1
                    if f"pytest.mark.xdist_group('{SESSION_GROUPS[arg]}')" not in marks:
                        missing.append(f"{path.relative_to(REPO)}::{fn.name} ({arg})")
    assert users >= 10, users  # the scan sees the wheel, light-install, demo and served tests
    assert missing == [], f"mark these xdist_group(<group>) as in tests/fixtures/workers.py: {missing}"


def _slow_files() -> set[str]:
    found = set()
    for path in _test_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        decorated = [m for fn in _test_functions(tree) for d in fn.decorator_list for m in _marks(d)]
        if any(m.startswith("pytest.mark.slow") for m in _module_marks(tree) + decorated):
            found.add(str(path.relative_to(REPO)))
    return found


def test_readme_lists_every_slow_test_file() -> None:
    """The README says which tests the test command leaves out."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index("The tests marked `slow`")
    paragraph = text[start:text.index("\n\n", start)]
    listed = set(re.findall(r"tests/[\w/]+\.py", paragraph))
    assert listed == _slow_files()


def test_workers_share_the_cpus() -> None:
    passive = {WAIT_KEY: "PASSIVE"}
    assert worker_threads({"PYTEST_XDIST_WORKER_COUNT": "2"}, 2) == {
        **dict.fromkeys(THREAD_KEYS, "1"), **passive}
    assert worker_threads({"PYTEST_XDIST_WORKER_COUNT": "3"}, 16) == {
        **dict.fromkeys(THREAD_KEYS, "5"), **passive}
    assert worker_threads({"PYTEST_XDIST_WORKER_COUNT": "4"}, 2) == {
        **dict.fromkeys(THREAD_KEYS, "1"), **passive}
    assert worker_threads({"PYTEST_XDIST_WORKER_COUNT": "1"}, 2) == {}
    assert worker_threads({"OMP_NUM_THREADS": "2", "PYTEST_XDIST_WORKER_COUNT": "2"}, 2) == {
        "MKL_NUM_THREADS": "1", **passive}
    assert worker_threads({WAIT_KEY: "ACTIVE", "PYTEST_XDIST_WORKER_COUNT": "2"}, 2) == (
        dict.fromkeys(THREAD_KEYS, "1"))
    with pytest.raises(ValueError, match="cpus must be >= 1, got 0"):
        worker_threads({}, 0)


def test_a_group_runs_on_one_worker_and_builds_its_session_fixture_once(tmp_path: Path) -> None:
    """Two xdist workers, one group over two modules (one test parametrized) and
    ungrouped tests beside it: the group's session fixture is built once. Under
    pytest 9.2 with xdist 3.8 alone it was built on both workers (pytest-xdist#1386)."""
    pytest.importorskip("xdist")
    log = tmp_path / "built.log"
    (tmp_path / "conftest.py").write_text(
        "import os\nimport pytest\n"
        "from tests.conftest import pytest_collection_modifyitems  # noqa: F401\n\n"
        "@pytest.fixture(scope='session')\ndef built():\n"
        f"    with open({str(log)!r}, 'a') as f:\n"
        "        f.write(os.environ['PYTEST_XDIST_WORKER'] + '\\n')\n")
    group = "import pytest\npytestmark = pytest.mark.xdist_group('g')\n"
    (tmp_path / "test_a.py").write_text(
        group + "def test_one(built): pass\n\n"
        "@pytest.mark.parametrize('m', ['a', 'b'])\ndef test_two(built, m): pass\n")
    (tmp_path / "test_b.py").write_text(group + "def test_three(built): pass\n")
    (tmp_path / "test_c.py").write_text("".join(f"def test_free_{i}(): pass\n" for i in range(6)))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "--dist",
         "loadgroup", "-o", "addopts=", "-v", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "10 passed" in done.stdout
    assert len(log.read_text().split()) == 1, (log.read_text(), done.stdout[-3000:])
    workers = {ln.split()[0] for ln in done.stdout.splitlines() if "@g" in ln and "PASSED" in ln}
    assert len(workers) == 1, done.stdout[-3000:]


def test_group_tag() -> None:
    assert group_tag("t.py::a[x]", ["w"]) == "t.py::a[x]@w"
    assert group_tag("t.py::a[x]@w", ["w"]) == "t.py::a[x]@w"  # tagged once
    assert group_tag("t.py::a[u@v]", ["w"]) == "t.py::a[u@v]@w"  # an @ inside the params
    assert group_tag("t.py::b", ["z", "a"]) == "t.py::b@a_z"
    assert group_tag("t.py::c", []) == "t.py::c"
