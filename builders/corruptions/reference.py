"""The reference implementation, ``imagecorruptions`` 1.1.2, made importable and
reproducible on today's numpy / scikit-image / setuptools without copying it.

Its only PyPI release breaks in four places; each is patched from the outside,
locally to that module (numpy itself is never modified):

* ``from pkg_resources import resource_filename`` (setuptools >= 80 dropped
  ``pkg_resources``): a tiny stand-in module is registered before the import
  when no real one exists;
* ``np.float_`` (removed in numpy 2): the module's ``np`` is a proxy of numpy
  that also answers ``float_``;
* ``gaussian(..., multichannel=True)`` (removed in scikit-image 0.19+): the
  module's ``gaussian`` translates it to ``channel_axis=-1``;
* ``impulse_noise`` ignored ``np.random.seed``: the module's
  ``sk.util.random_noise`` gets a ``Generator`` that shares the bit generator of
  numpy's global ``RandomState``, so ``np.random.seed(k)`` fixes every
  corruption, this one included.

``LegacyDraws`` lets the fast engine consume the very stream the reference
consumes after ``np.random.seed(k)``, which is what makes the fidelity tests
exact for the random corruptions too.

This module is for tests and benchmarks; the builder never uses it.
"""

from __future__ import annotations

import importlib
import os
import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from vlmrobust.core.errors import VlmrobustError

_PATCHED: types.ModuleType | None = None


def _resource_filename(package_or_module: str, resource: str) -> str:
    module = importlib.import_module(package_or_module)
    base = os.path.dirname(os.path.abspath(module.__file__ or ""))
    return os.path.normpath(os.path.join(base, resource))


def _install_pkg_resources_stand_in() -> None:
    if "pkg_resources" in sys.modules:
        return
    try:
        importlib.import_module("pkg_resources")
        return
    except ImportError:
        pass
    stand_in = types.ModuleType("pkg_resources")
    stand_in.resource_filename = _resource_filename  # type: ignore[attr-defined]
    sys.modules["pkg_resources"] = stand_in


class _NumpyProxy(types.ModuleType):
    """numpy, plus the aliases numpy 2 removed."""

    float_ = np.float64

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)


def _gaussian_with_multichannel(gaussian: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(image: Any, *args: Any, multichannel: bool | None = None, **kw: Any) -> Any:
        if multichannel:
            kw.setdefault("channel_axis", -1)
        return gaussian(image, *args, **kw)

    return wrapped


def _seeded_random_noise(random_noise: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(image: Any, *args: Any, **kw: Any) -> Any:
        if kw.get("rng") is None:
            # shares (and advances) the global legacy state, like np.random.* calls do
            kw["rng"] = np.random.Generator(np.random.mtrand._rand._bit_generator)
        return random_noise(image, *args, **kw)

    return wrapped


def load_reference() -> types.ModuleType:
    """The patched ``imagecorruptions`` package (``corrupt``, ``corruption_dict``)."""
    global _PATCHED
    if _PATCHED is not None:
        return _PATCHED
    _install_pkg_resources_stand_in()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            package = importlib.import_module("imagecorruptions")
        except ImportError as exc:
            raise VlmrobustError(
                f"cannot import the reference imagecorruptions ({exc}); "
                "install it with 'pip install imagecorruptions==1.1.2'"
            ) from None
    impl = importlib.import_module("imagecorruptions.corruptions")
    import skimage

    impl.np = _NumpyProxy("numpy")  # type: ignore[attr-defined]
    impl.gaussian = _gaussian_with_multichannel(skimage.filters.gaussian)  # type: ignore[attr-defined]
    impl.sk = types.SimpleNamespace(  # type: ignore[attr-defined]
        util=types.SimpleNamespace(random_noise=_seeded_random_noise(skimage.util.random_noise)),
        color=skimage.color,
    )
    _PATCHED = package
    return package


def reference_corrupt(image: np.ndarray, corruption: str, severity: int, seed: int) -> np.ndarray:
    """Run the reference on an (H, W, 3) uint8 array after ``np.random.seed(seed)``.

    The global legacy state is saved and restored around the call, so callers
    see no change in it."""
    package = load_reference()
    state = np.random.get_state()
    try:
        np.random.seed(seed)
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out: np.ndarray = package.corrupt(image, severity=severity, corruption_name=corruption)
    finally:
        np.random.set_state(state)
    return out


class LegacyDraws:
    """The engine's draw interface backed by a legacy ``RandomState``: the same
    numbers, in the same order, as the reference gets from ``np.random``."""

    def __init__(self, seed: int) -> None:
        self._rs = np.random.RandomState(seed)

    def normal(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None) -> Any:
        return self._rs.normal(loc, scale, size)

    def uniform(self, low: Any = 0.0, high: Any = 1.0, size: Any = None) -> Any:
        return self._rs.uniform(low, high, size)

    def poisson(self, lam: Any = 1.0, size: Any = None) -> Any:
        return self._rs.poisson(lam, size)

    def integers(self, low: int, high: int | None = None, size: Any = None) -> Any:
        return self._rs.randint(low, high, size)

    def random(self, size: Any = None) -> Any:
        return self._rs.random_sample(size)

    def poisson_levels(self, levels: np.ndarray, lam: float, cap: int) -> np.ndarray:
        """The reference's own draw, ``np.random.poisson(levels / 255 · lam)``."""
        return np.minimum(self._rs.poisson(levels / 255.0 * lam), cap)

    def salt_and_pepper(self, shape: tuple[int, ...], amount: float) -> np.ndarray:
        """scikit-image's ``random_noise(mode="s&p")`` draws: a uniform per value
        for the flip (<= amount), then another per value for salt (<= 0.5)."""
        flipped = self._rs.random_sample(shape) <= amount
        salted = self._rs.random_sample(shape) <= 0.5
        return np.where(flipped, np.where(salted, 2, 1), 0).astype(np.uint8)

    def normal_bytes(self, levels: np.ndarray, scale: float, multiplicative: bool
                     ) -> np.ndarray:
        """The reference's own draw, ``np.random.normal(size=x.shape, scale=c)``,
        then its float64 tail fused into one pass (``kernels.add_noise``)."""
        from vlmrobust.builders.corruptions import kernels

        noise = self._rs.normal(0.0, scale, levels.shape)
        return kernels.add_noise(levels, noise, multiplicative=multiplicative)
