"""Bootstrap helpers of the aggregation: seeded generators, resampled accuracies
and percentile intervals that say why they cannot be estimated.

Resample b redraws every model's accuracy on every config from its questions
(acc* = Binomial(n, acc)/n, which is exactly the distribution of the mean of n
correctness values drawn with replacement; one generator per model and config).
An interval that cannot be estimated (no bootstrap, too few resamples that define
a line, or no spread at all) is ``None`` with a reason, never a zero-width interval.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
from numpy.typing import NDArray

from vlmrobust.leaderboard.fits import lines as fit

# A resample whose line passes through only 2 distinct models has no residual
# information and extrapolates wildly, so a resample needs 3 distinct line models.
MIN_BOOTSTRAP_MODELS = 3
# Below this share of resamples that define a line, the percentile interval would
# describe a handful of lucky draws: the CI is reported as not estimable.
MIN_VALID_SHARE = 0.1


def seeded_rng(seed: int, *parts: str) -> np.random.Generator:
    """A generator keyed by (seed, *parts) alone, so a stream does not depend on
    which other models or configs were drawn before it."""
    digest = hashlib.sha256("\x1f".join((str(seed), *parts)).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def resampled_accuracy(acc: float, n: int, n_boot: int, rng: np.random.Generator,
                       ) -> NDArray[np.float64]:
    """Bootstrap replicates of an accuracy over its n questions: the mean of n
    correctness values drawn with replacement is Binomial(n, acc)/n, so the
    per-question vector is not needed. n = 0 (unknown) keeps the value fixed.

    >>> r = resampled_accuracy(0.75, 400, 20000, np.random.default_rng(0))
    >>> round(float(r.mean()), 2), round(float(r.std()), 3)  # sqrt(.75*.25/400) = 0.0217
    (0.75, 0.022)
    """
    if n <= 0:
        return np.full(n_boot, float(acc))
    return rng.binomial(n, min(max(float(acc), 0.0), 1.0), size=n_boot) / float(n)


def interval(samples: NDArray[np.float64], level: float, n_boot: int,
             ) -> tuple[tuple[float, float] | None, str | None]:
    """Percentile interval over the finite resamples, or (None, why not).

    >>> ci, why = interval(np.arange(101.0), 0.9, 101)
    >>> [round(v, 9) for v in ci], why
    ([5.0, 95.0], None)
    >>> interval(np.full(50, np.nan), 0.9, 50)[1]
    'not estimable: 0 of 50 resamples define a line (3 distinct models needed)'
    >>> interval(np.ones(50), 0.9, 50)[1]
    'not estimable: every resample gives the same value'
    """
    if n_boot == 0:
        return None, "not estimable: the bootstrap is off (bootstrap.n = 0)"
    ok = samples[np.isfinite(samples)]
    if ok.size < max(2, math.ceil(MIN_VALID_SHARE * n_boot)):
        return None, (f"not estimable: {ok.size} of {n_boot} resamples define a line "
                      f"({MIN_BOOTSTRAP_MODELS} distinct models needed)")
    ci = fit.percentile_ci(ok, level)
    if ci is None or ci[1] - ci[0] <= 1e-15 * max(1.0, abs(ci[0])):
        return None, "not estimable: every resample gives the same value"
    return ci, None
