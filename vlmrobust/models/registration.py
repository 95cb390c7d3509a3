"""The one module that imports every implementation and so fills the registries:
adapter families (classifier, clip, vlm, moondream, endpoint, pipeline, describe), backends (``hf``,
``endpoint``) and
readers (answer modes), as lm-evaluation-harness's ``models/__init__.py``
does. The protocol modules (models.base, models.backends.base,
models.readers.base) never import their implementations. The lookups by name
(:func:`parse_adapter_name`, :func:`load_adapter`) live in
:mod:`vlmrobust.models.lookup`, below the families that use them too.
"""

from __future__ import annotations

from vlmrobust.models import describe, moondream, pipeline, readers, vlm  # noqa: F401
from vlmrobust.models import endpoint as endpoint_adapter  # noqa: F401
from vlmrobust.models.backends import hf
from vlmrobust.models.backends.base import BACKENDS
from vlmrobust.models.backends.endpoint import backend as endpoint
from vlmrobust.models.classifiers import family as classifier  # noqa: F401
from vlmrobust.models.clip import openclip as clip  # noqa: F401
from vlmrobust.models.lookup import load_adapter, parse_adapter_name

if "hf" not in BACKENDS:
    BACKENDS.add("hf", hf.HF_FAMILY)
if "endpoint" not in BACKENDS:
    BACKENDS.add("endpoint", endpoint.ENDPOINT_FAMILY)

__all__ = ["BACKENDS", "load_adapter", "parse_adapter_name"]
