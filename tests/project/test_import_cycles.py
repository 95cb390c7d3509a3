"""No import cycles between the package's modules, imports inside functions
included (issue 38.4): the module graph grimp builds (as import-linter does) has
no strongly connected component; a planted cycle would be named."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures import import_graph
from tests.fixtures.import_graph import installed_layout

pytest.importorskip("grimp")


def _cycles(target: Path) -> list[list[str]]:
    env = {**os.environ, "PYTHONPATH": str(target)}
    r = subprocess.run([sys.executable, import_graph.__file__, str(target)], cwd=target, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    cycles: list[list[str]] = json.loads(r.stdout)
    return cycles


def test_the_module_graph_has_no_cycle(tmp_path: Path) -> None:
    cycles = _cycles(installed_layout(tmp_path / "site"))
    assert not cycles, "import cycles (lazy imports included):\n" + "\n".join(
        " -> ".join(c) for c in cycles)


def test_a_cycle_through_a_lazy_import_is_named(tmp_path: Path) -> None:
    target = installed_layout(tmp_path / "site")
    core = target / "vlmrobust" / "core"
    (core / "_planted_a.py").write_text("def f():\n    from vlmrobust.core import _planted_b\n",
                                        encoding="utf-8")
    (core / "_planted_b.py").write_text("from vlmrobust.core import _planted_a\n",
                                        encoding="utf-8")
    assert ["vlmrobust.core._planted_a", "vlmrobust.core._planted_b",
            "vlmrobust.core._planted_a"] in _cycles(target)


def test_components_match_an_independent_search() -> None:
    # every pair of nodes that reach each other, by brute-force reachability
    graph = {"a": ["b"], "b": ["c"], "c": ["a", "d"], "d": ["e"], "e": ["d"], "f": ["a"]}

    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for n in graph[todo.pop()]:
                if n not in seen:
                    seen.add(n)
                    todo.append(n)
        return seen

    mutual = {n: sorted({n} | {m for m in reach(n) if n in reach(m)}) for n in graph}
    expected = sorted({tuple(v) for v in mutual.values() if len(v) > 1})
    assert [tuple(c) for c in import_graph.strongly_connected(graph)] == expected
