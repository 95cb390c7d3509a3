"""The numbers of the Classification page (issue 23 item 5), from the
``classification``-kind sections of the submissions' scores.json:

- effective robustness on full-label-space accuracy, against its OWN
  reference line: the machinery of :mod:`.shift_fits` (one reference line per
  shift on the baseline of baselines.yaml, each family's and prompt's line,
  joint bootstrap) run on the accuracies of the configs scored over the whole
  label space (``over: label-space``), never on K-option or MCQ accuracies;
- each model's setting (how its answers were read: seed 002 Table 1's open vs
  closed world, CLIP's argmax over the label space, a classifier's logits);
- the label-set-size (K) curve points per model (seed 002 Fig. 2) and the
  calibration before / after seed 001's temperature per variant (Table IV).

Pure: records in, records out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from vlmrobust.leaderboard.board import variant_key
from vlmrobust.leaderboard.fits.shifts import Accuracies, strategy_fits
from vlmrobust.leaderboard.pages.classification.records import (
    ClassificationBoard,
    ClassificationER,
    KPoint,
)
from vlmrobust.leaderboard.submission import ConfigScore, DatasetScores, Submission
from vlmrobust.leaderboard.trust.baselines import BaselineSpec

if TYPE_CHECKING:
    from vlmrobust.leaderboard.trust.reference_runs import ReferenceRuns

KIND = "classification"
LABEL_SPACE = "label-space"
K_OPTIONS = "k-options"
# How a model's answers were read (ModelMeta.mode) -> seed 002's setting.
SETTINGS = {"open-world": "open world", "generate": "closed world (class names in the prompt)",
            "embedding": "label-space argmax (CLIP)", "class-logits": "label-space argmax (classifier)",
            "letter": "closed world (option letters)"}


def setting(mode: str | None) -> str:
    """Seed 002's setting of a submission from its answer mode.

    >>> setting("open-world"), setting("likelihood:avg"), setting(None)
    ('open world', 'closed world (likelihood:avg over class names)', 'unspecified')
    """
    if mode is None:
        return "unspecified"
    if mode.startswith("likelihood"):
        return f"closed world ({mode} over class names)"
    return SETTINGS.get(mode, mode)


# Variants with label spaces of their own, not shifts of ImageNet: no ER line
# against ImageNet val (seed 002 reports their accuracy only).
NOT_SHIFTS = frozenset({"flowers102", "stanford-cars", "caltech101"})


def full_configs(d: DatasetScores) -> list[ConfigScore]:
    """The configs scored over their whole label space (with a variant)."""
    return [c for c in d.configs if c.over == LABEL_SPACE and c.variant is not None]


def _er_configs(d: DatasetScores) -> list[ConfigScore]:
    return [c for c in full_configs(d) if c.accuracy is not None and c.variant not in NOT_SHIFTS]


def full_acc(d: DatasetScores) -> dict[tuple[str, str], float]:
    """(``label-space``, config) -> full-label-space accuracy of every config of
    an ImageNet variant (keyed by config: 3DCC has one per corruption and
    severity; the reference config ``imagenet-val`` is named as its variant)."""
    return {(LABEL_SPACE, c.config): float(c.accuracy or 0.0) for c in _er_configs(d)}


def full_n(d: DatasetScores) -> dict[tuple[str, str], int]:
    return {(LABEL_SPACE, c.config): c.n for c in _er_configs(d)}


def classification_keys(subs: Sequence[Submission]) -> tuple[str, ...]:
    return tuple(sorted({k for s in subs for k, d in s.datasets.items() if d.kind == KIND}))


def dataset_er(subs: Sequence[Submission], key: str, spec: BaselineSpec,
               record: ReferenceRuns | None) -> ClassificationER:
    """Lines and ER of dataset ``key`` on its full-label-space accuracies
    (reference variant: each section's ``reference_variant``)."""
    with_d = [s for s in subs if key in s.datasets]
    recorded = None if record is None else frozenset(
        s.model_id for s in with_d if key in s.evidence
        and record.covers(s.model_id, key, s.evidence[key].predictions_sha256))
    accs = Accuracies(with_d, spec, key, full_acc, full_n)
    fits, er, means = strategy_fits(with_d, accs, LABEL_SPACE, spec, recorded)
    return ClassificationER(key, tuple(fits), {m: tuple(v) for m, v in er.items()}, dict(means))


def classification_board(subs: Sequence[Submission], spec: BaselineSpec,
                         record: ReferenceRuns | None = None) -> ClassificationBoard | None:
    """The page's records; None when no submission has a classification section."""
    keys = classification_keys(subs)
    if not keys:
        return None
    er = {k: dataset_er(subs, k, spec, record) for k in keys}
    settings = {s.model_id: setting(s.meta.mode) for s in subs
                if any(k in s.datasets for k in keys)}
    return ClassificationBoard(keys, er, settings)


def variants(sections: Sequence[tuple[Submission, DatasetScores]]) -> list[str]:
    """The full-label-space variants of the sections, in the site's variant order."""
    return sorted({str(c.variant) for _, d in sections for c in full_configs(d)}, key=variant_key)


def k_points(d: DatasetScores, model_id: str) -> list[KPoint]:
    """A section's K-curve points: every K-option config ``<config>-k<K>`` (the
    builder's naming) and the full label space of ``<config>``, keyed by
    ``<config>`` (in ``variant``)."""
    full = {c.config: c for c in full_configs(d)}
    out = []
    bases = set()
    for c in d.configs:
        if c.over != K_OPTIONS or c.k is None or c.accuracy is None:
            continue
        base = c.config.removesuffix(f"-k{c.k}")
        if base == c.config:
            continue  # not a label-set-size config (e.g. ImageNet-D's 4 hardest options)
        bases.add(base)
        out.append(KPoint(model_id, base, int(c.k), float(c.accuracy), False))
    for base in sorted(bases):
        c = full.get(base)
        if c is not None and c.n_classes and c.accuracy is not None:
            out.append(KPoint(model_id, base, int(c.n_classes), float(c.accuracy), True))
    return sorted(out, key=lambda p: (variant_key(p.variant), p.k))
