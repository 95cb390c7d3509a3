"""How numbers print on the site: the Jinja filters every page uses ("—" for a
value that was not measured)."""

from __future__ import annotations

import math

from markupsafe import Markup, escape


def _finite(v: object) -> bool:
    """A real number to print (releases.json is read back from disk: anything else
    prints as not measured)."""
    if not isinstance(v, int | float) or isinstance(v, bool):
        return False
    # an int beyond float range (10**400) is not a number to print: isfinite() raises on it
    return abs(v) < 1e300 and math.isfinite(v)


def pct(v: float | None, digits: int = 1) -> str:
    """Accuracy as a percentage, "—" when not measured.

    >>> pct(0.8123), pct(None)
    ('81.2', '—')
    """
    return f"{v * 100:.{digits}f}" if _finite(v) and v is not None else "—"


def signed(v: float | None, digits: int = 3, scale: float = 1.0) -> str:
    """Signed number ("−" as the minus sign), "—" when undefined.

    >>> signed(-0.0123), signed(0.5, 1, 100.0), signed(None)
    ('−0.012', '+50.0', '—')
    """
    if not _finite(v):
        return "—"
    assert v is not None
    s = f"{v * scale:+.{digits}f}"
    return s.replace("-", "−")


def num(v: float | None, digits: int = 3) -> str:
    """Fixed-point number, "—" when undefined.

    >>> num(0.12345), num(None)
    ('0.123', '—')
    """
    return f"{v:.{digits}f}" if _finite(v) and v is not None else "—"


def pvalue(v: float | None) -> str:
    """A p-value as the seeds print it: 3 significant digits in e-notation below
    0.001 (seed 003's Table 2: 2.95e-21), else 4 decimals; "—" when undefined.

    >>> pvalue(2.9512e-21), pvalue(0.04321), pvalue(None)
    ('2.95e-21', '0.0432', '—')
    """
    if not _finite(v) or v is None:
        return "—"
    return f"{v:.2e}" if v < 1e-3 else f"{v:.4f}"


def params(v: int | None) -> str:
    """Parameter count in K/M/B.

    >>> params(4652008), params(7_000_000_000), params(None), params(10 ** 400)
    ('4.65M', '7B', '—', '—')
    """
    # metadata is range-checked at submit and build; a number beyond it never
    # reaches float division (10**400 / 1e9 raises OverflowError)
    if v is None or isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 10 ** 18:
        return "—"
    for unit, size in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if v >= size:
            return f"{v / size:.3g}{unit}"
    return str(v)


def data_v(v: object) -> str:
    """Raw sort key for a cell's data-v attribute ("" = missing)."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    return repr(v) if isinstance(v, float) else str(v)


def sort_attr(v: object) -> Markup:
    """A cell's `` data-v="…"`` at 6 significant digits, or nothing when the value
    is missing (the sort then reads the cell's "—" as not measured): for the long
    per-cell tables (a model page's 95 Bench-C cells × 15 columns; repr's 17
    digits were a quarter of the page). Every cell prints fewer digits, and the
    downloads keep full precision.

    >>> str(sort_attr(0.08720000000000001)), str(sort_attr(None)), str(sort_attr(95))
    (' data-v="0.0872"', '', ' data-v="95"')
    """
    key = format(v, ".6g") if isinstance(v, float) and math.isfinite(v) else data_v(v)
    return Markup(f' data-v="{escape(key)}"') if key else Markup("")


def tone(v: float | None) -> str:
    return "" if not _finite(v) or v == 0 else ("pos" if v > 0 else "neg")  # type: ignore[operator]


def times(v: float | None) -> str:
    """A relative error gap as seed 002 prints it ("28.5×"); "∞" where the
    reference made no error, "—" when not measured.

    >>> times(28.4999), times(float("inf")), times(None)
    ('28.5×', '∞', '—')
    """
    if isinstance(v, float) and v == math.inf:
        return "∞"
    return f"{v:.1f}×" if _finite(v) and v is not None else "—"
