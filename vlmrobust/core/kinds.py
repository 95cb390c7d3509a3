"""Question kinds: what a dataset's rows ask and what a prediction gives, and
the registries through which each stage finds a kind's code.

A family declares its kind in the manifest (``"kind"``); validate, score and
the leaderboard dispatch on it. Datasets built before kinds existed have none
and are ``mcq``.

| kind | rows | a prediction gives |
|---|---|---|
| ``mcq`` | per-row ``options``, ``answer`` | logits over the options, ``prediction`` or ``text`` |
| ``classification`` | ``label`` into the config's label space (stored once per config) | logits over the label space, or ``text`` |
| ``ood`` | ID and OOD images, ``is_ood``; OOD rows have no label | label-space logits |
| ``retrieval`` | images and their captions | image and text embeddings |
| ``open`` | question, reference answer, verdicts | ``text`` |

A kind is one :class:`QuestionKind` in :data:`QUESTION_KINDS` (its name and
the columns every row must have) plus, per stage, the entry points it provides
(issue 38.1, as lm-evaluation-harness's ``api/registry.py``):

| registry | filled by | what it holds |
|---|---|---|
| :data:`VALIDATORS` | ``evaluation/validate/registration.py`` | (dataset, predictions, config, cache) -> a :class:`KindReport` |
| :data:`SCORERS` | ``evaluation/scoring/registration.py`` | a :class:`Scorer`: scores.json section, per-row records, CLI line, stored bytes, eval headlines |
| :data:`SECTION_READERS` | ``leaderboard/registration.py`` | a :class:`SectionReader`: the kind's blocks of a scores.json section, the evidence re-scoring keeps |

Core holds only the registries and these protocols (it may not import the
stages); each stage's registration module imports its implementations and
registers them, so adding a kind adds one module per stage and one
:data:`QUESTION_KINDS` entry, and edits no dispatch code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.registry import Registry

MCQ = "mcq"
CLASSIFICATION = "classification"
OOD = "ood"
RETRIEVAL = "retrieval"
OPEN = "open"


@dataclass(frozen=True)
class QuestionKind:
    """A question kind: its manifest name, the columns every row must have
    (the writer refuses a row without them) and whether its rows index a label
    space stored once per config (label_space.py)."""

    name: str
    required_columns: tuple[str, ...]
    label_space: bool = False

    def __post_init__(self) -> None:
        if not self.name or self.name != self.name.strip():
            raise ValueError(f"question kind name must be a non-empty stripped string, "
                             f"got {self.name!r}")
        if "id" not in self.required_columns:
            raise ValueError(f"question kind {self.name!r}: required_columns "
                             f"{self.required_columns} lack 'id'")


QUESTION_KINDS: Registry[QuestionKind] = Registry("question kind")
for _kind in (
    QuestionKind(MCQ, ("id", "image", "question", "options", "answer")),
    QuestionKind(CLASSIFICATION, ("id", "image", "label"), label_space=True),
    QuestionKind(OOD, ("id", "image", "label", "is_ood"), label_space=True),  # label -1 on OOD rows
    QuestionKind(RETRIEVAL, ("id", "image", "captions")),
    QuestionKind(OPEN, ("id", "image", "question")),
):
    QUESTION_KINDS.add(_kind.name, _kind)

#: The built-in kinds (a kind registered later is in QUESTION_KINDS only).
KINDS = QUESTION_KINDS.names()
#: Built-in kinds whose rows index a label space stored once per config (label_space.py).
LABEL_SPACE_KINDS = frozenset(k for k in KINDS if QUESTION_KINDS.get(k).label_space)
#: Columns every row of a built-in kind must have.
REQUIRED_COLUMNS: dict[str, tuple[str, ...]] = {
    k: QUESTION_KINDS.get(k).required_columns for k in KINDS}


class KindReport(Protocol):
    """What a kind's validator returns: a predictions file that passed every
    check, aligned to its dataset; the kind's scorer reads it."""

    @property
    def sha256(self) -> str | None: ...  # of the predictions file's bytes as validated

    @property
    def meta(self) -> Mapping[str, Any] | None: ...  # the predictions' metadata

    @property
    def partial(self) -> Mapping[str, int] | None: ...  # a `predict --limit` run

    @property
    def dataset_name(self) -> str: ...

    def summary(self) -> str: ...  # the line `vlmrobust validate` prints


class Validator(Protocol):
    """(dataset dir, predictions file, config or None for all, a cache the
    caller keeps across calls or None) -> report; raises SubmissionError naming
    every kind of problem and writes nothing."""

    def __call__(self, dataset_dir: Path | str, predictions: Path | str, config: str | None,
                 cache: dict[Any, Any] | None, /) -> KindReport: ...


@dataclass(frozen=True)
class Scorer:
    """The scoring stage of one kind. ``options`` is
    vlmrobust.evaluation.scoring.options.ScoreOptions (seed, ImageNet-X
    annotations, OOD score, CFG grid)."""

    #: (report, model_id, options) -> the scores.json document (one dataset section)
    scores: Callable[[Any, str | None, Any], dict[str, Any]]
    #: (report, options) -> the per-row records (scores.rows.jsonl), in dataset order
    rows: Callable[[Any, Any], list[dict[str, Any]]]
    #: (dataset name, section) -> the lines `vlmrobust score` prints
    summary: Callable[[str, Mapping[str, Any]], list[str]]
    #: (report, predictions path) -> the bytes `submit` stores (None: the file as it is)
    stored: Callable[[Any, Path], bytes] | None = None
    #: (section) -> per config the headline rows `vlmrobust eval` reports ({config,
    #: metric, value, ci, n}; None: each config's accuracy)
    config_headlines: Callable[[Mapping[str, Any]], list[dict[str, Any]]] | None = None


@dataclass(frozen=True)
class SectionReader:
    """The leaderboard's reading of one kind's scores.json section; ``w`` is
    the leaderboard's field checker (vlmrobust.leaderboard.fields.Where)."""

    #: (w, section, where) -> block name -> parsed block (DatasetScores.blocks)
    blocks: Callable[[Any, Mapping[str, Any], str], Mapping[str, Any]] | None = None
    #: (w, config, where) -> a config's kind-specific numbers (ConfigScore.retrieval)
    config: Callable[[Any, Mapping[str, Any], str], Mapping[str, Any]] | None = None
    #: (report) -> what re-scoring keeps of a section (leaderboard/trust/evidence.py;
    #: None: the file's sha256 stands for its content)
    evidence: Callable[[Any], Any] | None = None


VALIDATORS: Registry[Validator] = Registry("question kind with a validator")
SCORERS: Registry[Scorer] = Registry("question kind with a scorer")
SECTION_READERS: Registry[SectionReader] = Registry("question kind with a leaderboard reader")


def question_kind(kind: str) -> QuestionKind:
    """The registered kind ``kind`` (check it first with :func:`check_kind`).

    >>> question_kind("ood").label_space
    True
    """
    return QUESTION_KINDS.get(kind)


def check_kind(kind: str, where: str = "kind") -> str:
    """``kind`` when it is known, else a one-line error naming the known ones.

    >>> check_kind("classification")
    'classification'
    >>> check_kind("mcqs")
    Traceback (most recent call last):
    ...
    vlmrobust.core.errors.VlmrobustError: kind: unknown question kind 'mcqs' (known: mcq, classification, ood, retrieval, open)
    """
    if kind not in QUESTION_KINDS:
        raise VlmrobustError(f"{where}: unknown question kind {kind!r} "
                             f"(known: {', '.join(QUESTION_KINDS.names())})")
    return kind


def dataset_kind(manifest: Mapping[str, Any], where: str = "manifest.json") -> str:
    """The kind a manifest declares; ``mcq`` when it declares none (older builds).

    >>> dataset_kind({}), dataset_kind({"kind": "ood"})
    ('mcq', 'ood')
    """
    kind = manifest.get("kind", MCQ)
    if not isinstance(kind, str):
        raise VlmrobustError(f"{where}: 'kind' must be a string, got {type(kind).__name__}; "
                             "rebuild the dataset")
    return check_kind(kind, where)


def config_kind(manifest: Mapping[str, Any], config: str, where: str = "manifest.json") -> str:
    """The kind of one config: its entry in ``config_kinds`` (a dataset whose
    configs ask different kinds, e.g. failure-discovery's ``open`` and ``mcq``),
    else the dataset's kind.

    >>> m = {"config_kinds": {"open": "open"}}
    >>> config_kind(m, "open"), config_kind(m, "mcq")
    ('open', 'mcq')
    """
    per = manifest.get("config_kinds") or {}
    if not isinstance(per, Mapping):
        raise VlmrobustError(f"{where}: 'config_kinds' must map config names to kinds; "
                             "rebuild the dataset")
    kind = per.get(config)
    return dataset_kind(manifest, where) if kind is None else check_kind(str(kind), where)


def refuse_open(manifest: Mapping[str, Any], configs: Sequence[str], where: str) -> None:
    """One line when any of ``configs`` is kind ``open``: free-form questions
    with verdicts, which predict / validate / score do not treat as choices."""
    open_ = [c for c in configs if config_kind(manifest, c, where) == OPEN]
    if open_:
        others = [str(c) for c in (manifest.get("configs") or {})
                  if config_kind(manifest, str(c), where) != OPEN]
        fix = f"pass --config {others[0]}" if others else "use a config of another kind"
        raise VlmrobustError(f"{where}: config {open_[0]!r} is kind open (free-form questions "
                             f"with verifier verdicts; not predicted or scored as choices); {fix}")
