"""Model groups (seed 001's model factors; issue 24.5): optional, validated
metadata fields that say how a model was built, so that lines and colours can
be drawn per group and the reference line restricted to models "trained only
on the reference distribution" (seed 000).

- ``architecture``: one of :data:`ARCHITECTURES` (``cnn``, ``vit``, ``hybrid``
  for conv-stem transformers and the like, ``other``);
- ``training_data``: the (pre-)training set, a lowercase slug such as
  ``imagenet-1k``, ``imagenet-21k``, ``laion-2b``, ``wit-400m``, ``datacomp-1b``.
  A filtered subset is a set of its own: ``commonpool-l`` (DataComp's unfiltered
  pool) and ``commonpool-l-clip`` (its CLIP-score-filtered subset) are two groups,
  the pair seed 001 Table IV compares (vlmrobust.models.clip.groups reads them
  from open_clip's tags);
- ``training_size``: number of training samples (images, or image-text pairs),
  an integer from 1 to 10^13;
- ``fine_tuned_on``: the data set a pre-trained model was fine-tuned on (slug), or absent;
- ``loss``: one of :data:`LOSSES` (``ce`` cross-entropy over classes,
  ``contrastive`` image-text, ``generative`` next-token / captioning, ``other``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from vlmrobust.core.text.display import short_repr

GROUP_FIELDS = ("architecture", "training_data", "training_size", "fine_tuned_on", "loss")
ARCHITECTURES = ("cnn", "vit", "hybrid", "other")
LOSSES = ("ce", "contrastive", "generative", "other")
# The reference distribution of ImageNet effective robustness (seed 000).
REFERENCE_TRAINING_DATA = "imagenet-1k"
MAX_TRAINING_SIZE = 10 ** 13
# Lowercase slugs: "imagenet-1k", "laion-2b", "imagenet-21k+imagenet-1k".
DATA_SLUG_RE = re.compile(r"[a-z0-9][a-z0-9._+-]{0,63}")
_ENUMS = {"architecture": ARCHITECTURES, "loss": LOSSES}


def group_problem(key: str, value: Any) -> str | None:
    """What is wrong with one group field's value (None: fine; None values are fine).

    >>> group_problem("architecture", "cnn"), group_problem("training_data", "laion-2b")
    (None, None)
    >>> group_problem("loss", "triplet")
    "loss 'triplet' is not one of ce, contrastive, generative, other"
    >>> group_problem("training_size", 0)
    'training_size must be an integer count of training samples from 1 to 1e+13, got 0'
    """
    if value is None:
        return None
    if key in _ENUMS:
        if not isinstance(value, str) or value not in _ENUMS[key]:
            return f"{key} {short_repr(value)} is not one of {', '.join(_ENUMS[key])}"
        return None
    if key == "training_size":
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TRAINING_SIZE:
            return (f"training_size must be an integer count of training samples from 1 to "
                    f"{MAX_TRAINING_SIZE:.0e}, got {short_repr(value)}")
        return None
    if key in ("training_data", "fine_tuned_on"):
        if not isinstance(value, str) or DATA_SLUG_RE.fullmatch(value) is None:
            return (f"{key} {short_repr(value)} is not a data-set slug: lowercase letters, digits "
                    "and . _ + -, at most 64 (e.g. imagenet-1k, laion-2b, wit-400m)")
        return None
    raise KeyError(key)


def group_problems(values: Mapping[str, Any]) -> list[str]:
    """Every problem among the group fields present in ``values``.

    >>> group_problems({"architecture": "vit", "loss": "contrastive", "name": "x"})
    []
    """
    return [p for k in GROUP_FIELDS if (p := group_problem(k, values.get(k))) is not None]


def trained_on_reference(training_data: str | None) -> bool:
    """Whether a model's training data is the reference distribution (ImageNet-1k
    only): unstated training data is not.

    >>> trained_on_reference("imagenet-1k"), trained_on_reference("laion-2b"), trained_on_reference(None)
    (True, False, False)
    """
    return training_data == REFERENCE_TRAINING_DATA


def training_size_of(value: Any) -> int | None:
    """A training size as written in YAML or on a command line ("1_281_167",
    "1.28e6", 400000000) as an int; anything else is returned unchanged for
    :func:`group_problem` to refuse.

    >>> training_size_of("1_281_167"), training_size_of("4e8"), training_size_of(None)
    (1281167, 400000000, None)
    """
    if isinstance(value, str):
        try:
            f = float(value.replace("_", ""))
        except ValueError:
            return value  # type: ignore[return-value]
        if f.is_integer():
            return int(f)
    return value
