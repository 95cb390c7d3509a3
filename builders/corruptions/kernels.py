"""Compiled per-pixel loops that replace whole-image float64 round trips.

``to_uint8`` fuses the reference's ``np.uint8(np.clip(y, 0, 1) * 255)`` tail
into one pass; the noise tails fuse their float64 operations likewise.
``div_exact`` divides by a constant without a division instruction, with the
quotient's rounding unchanged. (Brightness and saturate live in ``hsv.py``.)
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

INV255 = 1.0 / 255.0


def _fma_typer(typingctx: Any, a: Any, b: Any, c: Any) -> Any:  # pragma: no cover - compiled
    """a·b + c with one rounding (LLVM's fma, a single instruction here)."""
    sig = types.float64(types.float64, types.float64, types.float64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        d = ir.DoubleType()
        fn = builder.module.declare_intrinsic("llvm.fma", [d], ir.FunctionType(d, [d, d, d]))
        return builder.call(fn, args)

    return sig, codegen


# called from compiled code as _fma(a, b, c); numba supplies the typing context
_fma: Any = intrinsic(_fma_typer)


@numba.njit(cache=True, nogil=True, inline="always")
def div_exact(x: float, c: float, inv: float) -> float:  # pragma: no cover - compiled
    """x / c correctly rounded, from q = x·(1/c) and the exact remainder
    x − q·c (Markstein): a division costs as much as the rest of the kernel."""
    q = x * inv
    return _fma(_fma(-q, c, x), inv, q)


@numba.njit(cache=True, nogil=True)
def _unit(x: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover
    for i in range(x.shape[0]):
        out[i] = div_exact(np.float64(x[i]), 255.0, INV255)


def unit(x: np.ndarray) -> np.ndarray:
    """``x / 255.0`` for uint8 ``x`` (float64, bit for bit numpy's), vectorised."""
    x = np.ascontiguousarray(x)
    out = np.empty(x.shape, np.float64)
    _unit(x.reshape(-1), out.reshape(-1))
    return out


@numba.njit(cache=True, nogil=True)
def to_uint8(y: np.ndarray, scale: float, out: np.ndarray) -> None:  # pragma: no cover
    """out = uint8(clip(y·scale, 0, 1)·255) over a flat float array."""
    for i in range(y.shape[0]):
        v = y[i] * scale
        if v <= 0.0:
            out[i] = 0
        elif v >= 1.0:
            out[i] = 255
        else:
            out[i] = np.uint8(v * 255.0)


@numba.njit(cache=True, nogil=True)
def to_uint8_255(y: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover
    """out = uint8(clip(y, 0, 255)) over a flat float array."""
    for i in range(y.shape[0]):
        out[i] = np.uint8(min(max(y[i], 0.0), 255.0))


def finish255(y: np.ndarray) -> np.ndarray:
    """``uint8(clip(y, 0, 255))`` in one pass (truncation, as the reference)."""
    y = np.ascontiguousarray(y)
    out = np.empty(y.shape, np.uint8)
    to_uint8_255(y.reshape(-1), out.reshape(-1))
    return out


@numba.njit(cache=True, nogil=True)
def _counts_to_uint8(counts: np.ndarray, lam: float, out: np.ndarray) -> None:  # pragma: no cover
    for i in range(counts.shape[0]):
        out[i] = np.uint8(min(max(counts[i] / lam, 0.0), 1.0) * 255.0)


def photons_to_uint8(counts: np.ndarray, lam: float) -> np.ndarray:
    """``uint8(clip(counts / lam, 0, 1) · 255)`` in one pass (shot noise's tail)."""
    counts = np.ascontiguousarray(counts)
    out = np.empty(counts.shape, np.uint8)
    _counts_to_uint8(counts.reshape(-1), float(lam), out.reshape(-1))
    return out


@numba.njit(cache=True, nogil=True)
def _noise_mix(x: np.ndarray, noise: np.ndarray, multiplicative: bool,
               out: np.ndarray) -> None:  # pragma: no cover
    for i in range(x.shape[0]):
        f = x[i] / 255.0
        v = f + f * noise[i] if multiplicative else f + noise[i]
        out[i] = np.uint8(min(max(v, 0.0), 1.0) * 255.0)


def add_noise(x: np.ndarray, noise: np.ndarray, *, multiplicative: bool) -> np.ndarray:
    """``uint8(clip(f + n, 0, 1)·255)`` (or ``f + f·n``) with f = x/255, the
    reference's float64 operations fused into one pass over uint8 ``x``."""
    x = np.ascontiguousarray(x)
    noise = np.ascontiguousarray(noise, dtype=np.float64)
    out = np.empty(x.shape, np.uint8)
    _noise_mix(x.reshape(-1), noise.reshape(-1), multiplicative, out.reshape(-1))
    return out


def finish(y: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """``uint8(clip(y·scale, 0, 1)·255)`` in one pass (truncation, as the reference)."""
    y = np.ascontiguousarray(y)
    out = np.empty(y.shape, np.uint8)
    to_uint8(y.reshape(-1), scale, out.reshape(-1))
    return out
