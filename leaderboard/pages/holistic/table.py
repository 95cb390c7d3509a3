"""The Holistic page's tables: a :class:`Section` of :class:`HolisticRow` cells,
the :data:`SECTIONS` registry every axis adds its sections to, and the cell and
row helpers they share. Below the page (pages/holistic.py) and the modules that
register a section (holistic_3dcc, holistic_ood, retrieval), so that the page
imports them and none imports the page (issue 38.4: no import circles)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from markupsafe import Markup

from vlmrobust.core.registry import Registry
from vlmrobust.leaderboard.board import Leaderboard, family_key
from vlmrobust.leaderboard.pages.formatting import data_v, params, pct, signed, tone
from vlmrobust.leaderboard.submission import Submission


@dataclass(frozen=True)
class Cell:
    text: str
    sort: str = ""  # data-v: the raw value the table sorts by ("" = not measured)
    title: str = ""
    tone: str = ""


@dataclass(frozen=True)
class HolisticRow:
    model_id: str
    name: str
    page: str
    family: str
    group: str
    cells: tuple[Cell, ...]


@dataclass(frozen=True)
class Section:
    key: str  # the anchor
    title: str
    intro: str
    columns: tuple[str, ...]
    rows: tuple[HolisticRow, ...]
    notes: tuple[str, ...] = field(default=())
    charts: tuple[Markup, ...] = field(default=())  # SVG (escaped text), a plot file (render.py)

    def __post_init__(self) -> None:
        bad = [r.model_id for r in self.rows if len(r.cells) != len(self.columns)]
        if bad:
            raise ValueError(f"section {self.key}: row {bad[0]!r} has a cell count that differs "
                             f"from the {len(self.columns)} columns")


SectionMaker = Callable[[Leaderboard], Sequence[Section]]
SECTIONS: Registry[SectionMaker] = Registry("holistic section")
ORDER = ("ood", "shape-bias", "imagenet-x", "3dcc", "retrieval")


def group_label(s: Submission) -> str:
    """The model-group fields a submission states, joined ("—" when none).

    >>> from types import SimpleNamespace as N
    >>> group_label(N(meta=N(architecture="vit", training_data="laion-2b", loss="contrastive",
    ...                      fine_tuned_on=None, training_size=2_000_000_000)))
    'vit · laion-2b (2B) · contrastive'
    """
    m = s.meta
    data = getattr(m, "training_data", None)
    size = getattr(m, "training_size", None)
    if data and size:
        data = f"{data} ({params(size)})"
    tuned = getattr(m, "fine_tuned_on", None)
    parts = [getattr(m, "architecture", None), data, getattr(m, "loss", None),
             f"fine-tuned on {tuned}" if tuned else None]
    return " · ".join(p for p in parts if p) or "—"


def make_row(lb: Leaderboard, s: Submission, cells: Sequence[Cell]) -> HolisticRow:
    return HolisticRow(s.model_id, s.meta.name, lb.pages.get(s.model_id, ""), s.meta.family,
                       group_label(s), tuple(cells))


def grouped(rows: Sequence[HolisticRow]) -> tuple[HolisticRow, ...]:
    """Rows ordered by group (stated groups first), family, then name."""
    return tuple(sorted(rows, key=lambda r: (r.group == "—", r.group, family_key(r.family),
                                             r.name.casefold(), r.model_id)))


def acc_cell(v: float | None, title: str = "") -> Cell:
    return Cell(pct(v), data_v(v), title)


def er_cell(v: float | None, title: str = "") -> Cell:
    return Cell(signed(v, 1, 100.0), data_v(v), title, tone(v))


def er_ci_cell(v: float | None, ci: tuple[tuple[float, float] | None, str | None],
               level: float) -> Cell:
    """An ER in points with its bootstrap interval beside it (the reason in the
    title when there is none)."""
    bounds, why = ci
    if v is None or bounds is None:
        return er_cell(v, why or "")
    text = f"{signed(v, 1, 100.0)} [{signed(bounds[0], 1, 100.0)} … {signed(bounds[1], 1, 100.0)}]"
    return Cell(text, data_v(v), f"{level:.0%} bootstrap interval over images and reference "
                "models", tone(v))
