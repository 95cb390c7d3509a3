"""The test command's schedule (issue 39 item 4): its longest tests start first
on the two xdist workers (tests/fixtures/workers.py FIRST, ordered by
tests/conftest.py), and mypy runs beside pytest with its output and its exit
status kept (scripts/run-tests.sh)."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.workers import FIRST, first_order

REPO = Path(__file__).resolve().parents[2]


def test_first_order_is_a_stable_sort_by_prefix() -> None:
    ids = ["t/a.py::x", "t/b.py::y[1]", "t/b.py::y[2]@g", "t/c.py::z", "t/bb.py::w", "t/b.py::v"]
    # a file prefix takes its every test; a test prefix its parameters and group tag
    assert first_order(ids, ["t/c.py", "t/b.py::y"]) == [3, 1, 2, 0, 4, 5]
    assert first_order(ids, ["t/b.py"]) == [1, 2, 5, 0, 3, 4]  # not t/bb.py
    assert first_order(ids, []) == list(range(len(ids)))
    assert first_order([], FIRST) == []


def test_every_first_entry_names_a_test() -> None:
    """A renamed file or test would silently drop out of the schedule."""
    assert len(FIRST) == len(set(FIRST))
    for entry in FIRST:
        path, _, name = entry.partition("::")
        assert (REPO / path).is_file(), entry
        if name:
            tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
            assert name in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}, entry


def test_the_longest_test_starts_at_once_on_two_workers(tmp_path: Path) -> None:
    """FIRST's first entry, as a grouped test file collected after twelve
    other tests: with the conftest's order it is among the first two tests
    started (one per worker); without it it would start after those twelve."""
    pytest.importorskip("xdist")
    log = tmp_path / "started.log"
    (tmp_path / "conftest.py").write_text(
        "import pytest\n"
        "from tests.conftest import pytest_collection_modifyitems  # noqa: F401\n\n"
        "@pytest.fixture(autouse=True)\ndef started(request):\n"
        f"    with open({str(log)!r}, 'a') as f:\n"
        "        f.write(request.node.nodeid + '\\n')\n")
    path, _, name = FIRST[0].partition("::")
    (tmp_path / path).parent.mkdir(parents=True)
    (tmp_path / path).write_text("import pytest\npytestmark = pytest.mark.xdist_group('g')\n"
                                 f"def {name or 'test_long'}(): pass\ndef test_other(): pass\n")
    (tmp_path / "tests" / "aaa").mkdir()
    (tmp_path / "tests" / "aaa" / "test_free.py").write_text(
        "import time\n" + "".join(f"def test_free_{i}(): time.sleep(0.05)\n" for i in range(12)))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "--dist",
         "loadgroup", "--no-loadscope-reorder", "-o", "addopts=", "-q", "tests"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    started = log.read_text().split()
    assert len(started) == 14
    assert any(s.startswith(FIRST[0]) for s in started[:2]), started


def _waits_for(other: str) -> str:
    return (f"for i in $(seq 150); do [ -e {other}.started ] && break; sleep 0.1; done\n"
            f"[ -e {other}.started ] || {{ echo 'no {other} beside me'; exit 3; }}\n")


def _fake_checkout(tmp_path: Path, mypy_rc: int, pytest_rc: int) -> Path:
    """The test command's script beside stand-ins for setup, ruff, the layer
    check, mypy and pytest. mypy's and pytest's each wait up to 15 s for the
    other to have started, so they fail unless they run side by side."""
    root = tmp_path / f"c{mypy_rc}{pytest_rc}"
    (root / "scripts").mkdir(parents=True)
    shutil.copy2(REPO / "scripts" / "run-tests.sh", root / "scripts" / "run-tests.sh")
    (root / "scripts" / "setup.sh").write_text("echo setup\n")
    (root / "scripts" / "lint-imports.sh").write_text("echo 'Contracts: 10 kept, 0 broken.'\n")
    venv = root / ".venv" / "bin"
    venv.mkdir(parents=True)
    stubs = {
        "ruff": "exit 0",
        "mypy": f"touch mypy.started\n{_waits_for('pytest')}echo 'mypy says: checked'\nexit {mypy_rc}",
        "python": (f"touch pytest.started\n{_waits_for('mypy')}echo 'pytest says: done'\n"
                   f"exit {pytest_rc}"),
    }
    for name, body in stubs.items():
        (venv / name).write_text(f"#!/usr/bin/env bash\n{body}\n")
        (venv / name).chmod(0o755)
    return root


@pytest.mark.parametrize(("mypy_rc", "pytest_rc", "want"), [(0, 0, 0), (1, 0, 1), (0, 1, 1),
                                                            (1, 1, 1)])
def test_mypy_beside_pytest_keeps_its_output_and_status(tmp_path: Path, mypy_rc: int,
                                                       pytest_rc: int, want: int) -> None:
    root = _fake_checkout(tmp_path, mypy_rc, pytest_rc)
    done = subprocess.run(["bash", "scripts/run-tests.sh"], cwd=root, capture_output=True,
                          text=True, timeout=120)
    out = done.stdout
    assert (done.returncode != 0) == bool(want), out + done.stderr
    assert "pytest says: done" in out, out
    # mypy's own output, whole, after pytest's, under its heading
    assert out.index("pytest says: done") < out.index("[tests] mypy\n") < out.index("mypy says")
    assert ("[tests] mypy failed" in out) == bool(mypy_rc)
    assert "Contracts: 10 kept" in out
