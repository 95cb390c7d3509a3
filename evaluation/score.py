"""Deprecated import path: moved to :mod:`vlmrobust.evaluation.scoring.dataset` (issue 38). Its names
resolve here for one minor version and warn on use."""

from vlmrobust.core.deprecation import deprecated_forward

__getattr__ = deprecated_forward(__name__, "vlmrobust.evaluation.scoring.dataset")
