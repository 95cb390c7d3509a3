"""The one module that imports every built-in validator and registers it in
:data:`vlmrobust.core.kinds.VALIDATORS`, as vlmrobust.models.registration fills
the model registries; whoever validates a dataset of any kind asks
:func:`validator_for` (the CLI, ``score``, ``submit``, the leaderboard's
re-scoring), never an if-chain on the kind string.

A new kind registers its validator from its own module
(``VALIDATORS.add("my-kind", my_validator)``).
"""

from __future__ import annotations

from pathlib import Path

from vlmrobust.core.kinds import (
    CLASSIFICATION,
    MCQ,
    OOD,
    OPEN,
    RETRIEVAL,
    VALIDATORS,
    KindReport,
    Validator,
    dataset_kind,
)
from vlmrobust.evaluation.validate.check import validate
from vlmrobust.evaluation.validate.dataset_cache import DatasetCache
from vlmrobust.evaluation.validate.retrieval import validate_retrieval


def _option_kinds(dataset_dir: Path | str, predictions: Path | str, config: str | None,
                  cache: DatasetCache | None, /) -> KindReport:
    return validate(dataset_dir, predictions, config, cache=cache)


def _retrieval(dataset_dir: Path | str, predictions: Path | str, config: str | None,
               cache: DatasetCache | None, /) -> KindReport:
    return validate_retrieval(dataset_dir, predictions, config, cache=cache)


# Logits, a prediction or text over a row's options or its config's label space.
# A dataset-level kind open reaches the same checks, which refuse its configs
# with the fix (vlmrobust.core.kinds.refuse_open).
for _kind in (MCQ, CLASSIFICATION, OOD, OPEN):
    VALIDATORS.add(_kind, _option_kinds)
VALIDATORS.add(RETRIEVAL, _retrieval)  # image and caption embeddings


def dataset_kind_of(dataset_dir: Path | str) -> str:
    """The kind the dataset directory's manifest declares."""
    from vlmrobust.core.datadir import read_manifest

    return dataset_kind(read_manifest(Path(dataset_dir)))


def validator_for(kind: str) -> Validator:
    """The validator of ``kind`` (one line naming the registered kinds when none)."""
    return VALIDATORS.get(kind)


def validate_dataset(dataset_dir: Path | str, predictions: Path | str,
                     config: str | None = None) -> KindReport:
    """Validate ``predictions`` against a dataset of any registered kind."""
    return validator_for(dataset_kind_of(dataset_dir))(dataset_dir, predictions, config, None)
