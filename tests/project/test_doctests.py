"""Every docstring example in the installed package runs (imported by its
package name, so each module is imported once, under vlmrobust.*)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import vlmrobust

# Mapped with setuptools package-dir: an editable install resolves them by name,
# but they are not folders of vlmrobust.__path__, so walk each one from its own.
MAPPED = ("benchmarks", "builders", "evaluation", "leaderboard")


def _modules() -> list[str]:
    names = {"vlmrobust"}
    roots = [("vlmrobust", vlmrobust.__path__)]
    for sub in MAPPED:
        package = importlib.import_module(f"vlmrobust.{sub}")
        names.add(package.__name__)
        roots.append((package.__name__, package.__path__))
    for prefix, path in roots:
        for info in pkgutil.walk_packages(path, f"{prefix}."):
            names.add(info.name)
    return sorted(names)


MODULES = _modules()


def _has_examples(name: str) -> bool:
    """Whether the module's source holds a doctest prompt (read, not imported)."""
    import importlib.util

    spec = importlib.util.find_spec(name)
    origin = spec.origin if spec is not None else None
    if not origin or not origin.endswith(".py"):
        return False
    return ">>> " in Path(origin).read_text(encoding="utf-8")


# Only modules with examples are test items: a module without any would pass
# having run nothing, and inflate the count.
WITH_EXAMPLES = [m for m in MODULES if _has_examples(m) and not m.endswith("__main__")]


def test_walk_sees_every_mapped_subpackage() -> None:
    # The package-dir mapping must be visible through the installed package.
    for sub in ("core", "models", "metrics", "builders", "evaluation", "leaderboard",
                "benchmarks", "cli"):
        assert f"vlmrobust.{sub}" in MODULES
    # the metric functions carry their formula and an example (house style)
    assert {"vlmrobust.metrics.calibration", "vlmrobust.metrics.bench_c.ras"} <= set(WITH_EXAMPLES)
    assert len(WITH_EXAMPLES) < len(MODULES)


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_doctests(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                             verbose=False)
    assert result.attempted > 0, f"{name}: has '>>> ' but no doctest example ran"
    assert result.failed == 0, f"{name}: {result.failed} doctest(s) failed"
