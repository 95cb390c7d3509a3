"""When a submission is complete (issues 37.4, 40.4): it answers every family its
model's kind can answer, as the ``vlmrobust eval`` suite the leaderboard names
(``full`` by default: benchmarks/suites/full.yaml) reads that kind. A family the
suite skips for the kind (a classifier reads no ImageWikiQA question, a VLM
gives no retrieval embeddings) is never missing; ``other`` models (pipelines,
describers, anything else) have no reader in the suite, so no family is
required of them. Measured against all families instead, every model was
"partial".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

from vlmrobust.evaluation.model_meta import MODEL_FAMILIES
from vlmrobust.evaluation.suite.spec import Suite, load_suite

COMPLETENESS_SUITE = "full"
# The leaderboard's model kinds whose adapter family of the same name the suites read.
READ_KINDS = ("classifier", "clip", "vlm")


@dataclass(frozen=True)
class Completeness:
    """Per model kind, the families a complete submission answers (suite order)."""

    suite: str
    version: str
    expected: Mapping[str, tuple[str, ...]]
    # kind -> family -> why the suite does not ask it of that kind
    skipped: Mapping[str, Mapping[str, str]]

    def __post_init__(self) -> None:
        unknown = sorted(set(self.expected) - set(MODEL_FAMILIES))
        if unknown:
            raise ValueError(f"unknown model kind {unknown[0]!r}; kinds: {list(MODEL_FAMILIES)}")

    def of(self, kind: str) -> tuple[str, ...]:
        """The families a ``kind`` model must answer to be complete (none for ``other``)."""
        return self.expected.get(kind, ())


def completeness(suite: Suite) -> Completeness:
    """What ``suite`` asks of each model kind.

    >>> c = completeness(load_suite("full"))
    >>> "ood" in c.of("clip"), "ood" in c.of("vlm"), c.of("other")
    (True, False, ())
    """
    names = [d.name for d in suite.datasets]
    expected: dict[str, tuple[str, ...]] = {}
    skipped: dict[str, dict[str, str]] = {}
    for kind in READ_KINDS:
        readers = {n: suite.reader(kind, n) for n in names}
        expected[kind] = tuple(n for n, r in readers.items() if r.skip is None)
        skipped[kind] = {n: str(r.skip) for n, r in readers.items() if r.skip is not None}
    return Completeness(suite.name, suite.version, expected, skipped)


@cache
def default_completeness() -> Completeness:
    return completeness(load_suite(COMPLETENESS_SUITE))
