"""Checking a predictions file against the dataset it claims to answer."""

from vlmrobust.core.deprecation import deprecated_forward

# vlmrobust.evaluation.validate was one module until issue 38: its names resolve here for one minor version.
__getattr__ = deprecated_forward(__name__, "vlmrobust.evaluation.validate.check")
