"""Running a model over a dataset: the run, its batches, distributed ranks, the
rows it plans and how it records provenance."""

from vlmrobust.core.deprecation import deprecated_forward

# vlmrobust.evaluation.predict was one module until issue 38: its names resolve here for one minor version.
__getattr__ = deprecated_forward(__name__, "vlmrobust.evaluation.predict.dataset")
