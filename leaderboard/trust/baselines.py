"""The versioned reference-baseline definition (leaderboard/baselines.yaml)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.model_groups import DATA_SLUG_RE, REFERENCE_TRAINING_DATA
from vlmrobust.evaluation.model_meta import MODEL_FAMILIES as FAMILIES
from vlmrobust.evaluation.model_meta import MODEL_ID_RE
from vlmrobust.metrics.lines.robust_fit import FITS as ROBUST_FITS

DEFAULT_BASELINES = Path(__file__).parents[1] / "baselines.yaml"
TRANSFORMS = ("probit", "logit")
# A line through 2 points has no residual information; the seed fits dozens.
DEFAULT_MIN_MODELS = 3
_MAX_BYTES = 1 << 20


#: How a line is fitted in transformed space (vlmrobust.metrics.lines.robust_fit.line_params).
FITS = ROBUST_FITS
#: Metadata fields the charts can colour and fit lines by (evaluation.model_groups).
GROUP_FIELDS = ("family", "architecture", "training_data", "fine_tuned_on", "loss")


class BaselineSpecError(VlmrobustError):
    """baselines.yaml is malformed."""


@dataclass(frozen=True)
class BaselineSpec:
    """Which models define the reference line, and how lines and CIs are computed.

    ``reference_models`` (explicit ids) wins over ``reference_family`` (every
    submission of that family whose metadata says ``training_data`` is
    ``reference_training_data``: seed 000's "trained only on the reference
    distribution"; None drops that condition)."""

    version: str
    transform: str = "probit"
    fit: str = "least-squares"  # or "huber": seed 001's robust trend lines
    # seed 001's own trend lines (the Holistic page: ImageNet-X factor lines, the OOD and
    # 3DCC charts): "fit with robust linear regression [75]" (Figs. 1, 3), so Huber
    holistic_fit: str = "huber"
    group_by: str = "family"  # the metadata field whose values get their own lines and colours
    reference_family: str = "classifier"
    reference_models: tuple[str, ...] = ()
    reference_training_data: str | None = REFERENCE_TRAINING_DATA
    min_models: int = DEFAULT_MIN_MODELS
    n_bootstrap: int = 1000
    seed: int = 0
    level: float = 0.95
    headline_strategy: str = "wordnet"

    def __post_init__(self) -> None:
        if self.transform not in TRANSFORMS:
            raise ValueError(f"transform must be one of {TRANSFORMS}, got {self.transform!r}")
        if self.group_by not in GROUP_FIELDS:
            raise ValueError(f"group_by must be one of {GROUP_FIELDS}, got {self.group_by!r}")
        if self.fit not in FITS:
            raise ValueError(f"fit must be one of {FITS}, got {self.fit!r}")
        if self.holistic_fit not in FITS:
            raise ValueError(f"holistic_fit must be one of {FITS}, got {self.holistic_fit!r}")
        if not 0.0 < self.level < 1.0:
            raise ValueError("level must lie in (0, 1)")
        if self.n_bootstrap < 0:
            raise ValueError("n_bootstrap must be >= 0")
        if self.min_models < 2:
            raise ValueError("min_models must be >= 2 (a line needs two points)")
        if self.reference_family not in FAMILIES:
            raise ValueError(f"unknown reference family {self.reference_family!r}; "
                             f"choose one of {list(FAMILIES)}")
        if self.reference_training_data is not None and (
                not isinstance(self.reference_training_data, str)
                or DATA_SLUG_RE.fullmatch(self.reference_training_data) is None):
            raise ValueError(f"reference training_data {self.reference_training_data!r} is not a "
                             "data-set slug such as imagenet-1k")
        bad = [i for i in self.reference_models if not MODEL_ID_RE.fullmatch(i)]
        if bad:
            raise ValueError(f"invalid model ids {bad}")
        if not self.headline_strategy:
            raise ValueError("headline_strategy must not be empty")

    @property
    def overview_strategy(self) -> str:
        """Former name of :attr:`headline_strategy` (baselines.yaml version 1)."""
        return self.headline_strategy

    def reference_ids(self, family_of: dict[str, str],
                      training_data_of: dict[str, str | None] | None = None) -> list[str]:
        """The reference models among ``family_of`` (model id -> family) plus the
        listed ids that were not submitted (callers report those as missing).
        ``training_data_of`` (model id -> its metadata's training_data) restricts
        a family reference to models trained on ``reference_training_data``."""
        if self.reference_models:
            return sorted(self.reference_models)
        return sorted(m for m, f in family_of.items()
                      if f == self.reference_family and self.trained_on_reference(
                          (training_data_of or {}).get(m)))

    def trained_on_reference(self, training_data: str | None) -> bool:
        """Whether a model of the reference family with this training data belongs
        on the reference line (unstated training data does not).

        >>> s = BaselineSpec(version="x")
        >>> s.trained_on_reference("imagenet-1k"), s.trained_on_reference("laion-2b"), s.trained_on_reference(None)
        (True, False, False)
        """
        return self.reference_training_data is None or training_data == self.reference_training_data

    @property
    def reference_label(self) -> str:
        if self.reference_models:
            return f"{len(self.reference_models)} listed models"
        if self.reference_training_data is not None:
            return f"the {self.reference_family} family trained on {self.reference_training_data}"
        return f"the {self.reference_family} family"

    def as_record(self) -> dict[str, object]:
        return {
            "version": self.version, "transform": self.transform, "fit": self.fit,
            "holistic_fit": self.holistic_fit,
            "group_by": self.group_by,
            "reference": {"family": None if self.reference_models else self.reference_family,
                          "training_data": None if self.reference_models
                          else self.reference_training_data,
                          "models": list(self.reference_models)},
            "min_models": self.min_models,
            "bootstrap": {"n": self.n_bootstrap, "seed": self.seed, "level": self.level,
                          "over": ["questions", "line models"]},
            "headline_strategy": self.headline_strategy,
        }


def _parse(path: Path, raw: Any) -> BaselineSpec:
    if not isinstance(raw, dict) or "version" not in raw:
        raise BaselineSpecError(f"{path}: needs a mapping with a 'version' key; "
                                "see leaderboard/baselines.yaml")
    if "families" in raw:
        raise BaselineSpecError(
            f"{path}: 'families' (baselines.yaml version 1, one line per family) is gone; "
            "write 'reference: {family: classifier}' or 'reference: {models: [...]}'")
    boot = raw.get("bootstrap") or {}
    ref = raw.get("reference") or {}
    if not isinstance(boot, dict) or not isinstance(ref, dict):
        raise BaselineSpecError(f"{path}: 'bootstrap' and 'reference' must be mappings")
    models = ref.get("models") or []
    if not isinstance(models, list):
        raise BaselineSpecError(f"{path}: reference.models must be a list of model ids")
    try:
        return BaselineSpec(
            version=str(raw["version"]),
            transform=str(raw.get("transform", "probit")),
            fit=str(raw.get("fit", "least-squares")),
            holistic_fit=str(raw.get("holistic_fit", "huber")),
            group_by=str(raw.get("group_by", "family")),
            reference_family=str(ref.get("family") or "classifier"),
            reference_models=tuple(str(x) for x in models),
            # absent: the seed's rule; an explicit null: any training data
            reference_training_data=(str(ref["training_data"]) if ref.get("training_data")
                                     is not None else None) if "training_data" in ref
            else REFERENCE_TRAINING_DATA,
            min_models=int(raw.get("min_models", DEFAULT_MIN_MODELS)),
            n_bootstrap=int(boot.get("n", 1000)),
            seed=int(boot.get("seed", 0)),
            level=float(boot.get("level", 0.95)),
            headline_strategy=str(raw.get("headline_strategy", "wordnet")),
        )
    except (ValueError, TypeError) as exc:
        raise BaselineSpecError(f"{path}: {exc}; fix the file") from None


def load_baselines(path: Path | None = None) -> BaselineSpec:
    path = Path(path) if path is not None else DEFAULT_BASELINES
    try:
        with path.open("rb") as fh:
            data = fh.read(_MAX_BYTES + 1)
    except FileNotFoundError:
        raise BaselineSpecError(f"{path}: missing; pass an existing baselines YAML") from None
    if len(data) > _MAX_BYTES:
        raise BaselineSpecError(f"{path}: larger than {_MAX_BYTES} bytes; not a baselines file")
    try:
        raw = yaml.safe_load(data.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise BaselineSpecError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    return _parse(path, raw)
