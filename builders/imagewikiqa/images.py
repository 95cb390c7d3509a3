"""Image assignment: which images each question is asked about, under the caps
(at most ``images_per_question`` images per question, one image per row, each
question -- its text and options, Candidate.cap_key -- in at most ``repeat_cap``
rows, each question text -- Candidate.text_key, over all classes and options --
in at most ``text_cap`` rows, at most ``num_rows`` rows)."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from vlmrobust.builders.image_files import MAX_IMAGE_BYTES
from vlmrobust.builders.imagewikiqa.question import Candidate
from vlmrobust.builders.imagewikiqa.seeds import rng_for
from vlmrobust.core.errors import SourceError
from vlmrobust.core.files.bounded import read_bytes_bounded


@dataclass(frozen=True)
class ClassImage:
    key: str          # unique over the source (file name / sample key)
    path: Path
    label: int

    def __post_init__(self) -> None:
        if not self.key:
            raise ValueError("image key must not be empty")


@dataclass(frozen=True)
class Assignment:
    question: Candidate
    image: ClassImage

    def __post_init__(self) -> None:
        if self.image.label != self.question.label:
            raise ValueError(f"image {self.image.key} (label {self.image.label}) assigned to a "
                             f"question about label {self.question.label}")


def pick_questions(survivors: Sequence[Candidate], n: int, seed: int) -> list[Candidate]:
    """Up to ``n`` survivors of one class: knowledge questions first, then
    appearance/other, then naming (definition, taxonomy); within a tier, round
    robin over generator kinds in a seeded order, seeded order within a kind."""
    from vlmrobust.builders.imagewikiqa.qtypes import priority

    if not survivors:
        return []
    rng = rng_for(seed, survivors[0].wnid, "pick")
    out: list[Candidate] = []
    for tier in (0, 1, 2):
        by_kind: dict[str, list[Candidate]] = {}
        for c in survivors:
            if priority(c.qtype) == tier:
                by_kind.setdefault(c.kind, []).append(c)
        kinds = sorted(by_kind)
        queues = [[by_kind[kd][int(i)] for i in rng.permutation(len(by_kind[kd]))]
                  for kd in (kinds[int(j)] for j in rng.permutation(len(kinds)))]
        while len(out) < n and any(queues):
            for q in queues:
                if q and len(out) < n:
                    out.append(q.pop(0))
    return out


def text_row_cap(n_rows: int, share: float, floor_rows: int) -> int:
    """Rows one question text may fill in a build of ``n_rows`` rows: at most
    ``share`` of them, but never fewer than ``floor_rows`` (one question with its
    images, the repeat cap), so small builds keep their questions.

    >>> text_row_cap(2000, 0.0075, 3), text_row_cap(231, 0.0075, 3), text_row_cap(10, 1.0, 3)
    (15, 3, 10)
    """
    if n_rows < 0 or floor_rows < 1 or not 0.0 < share <= 1.0:
        raise ValueError(f"need n_rows >= 0, floor_rows >= 1, share in (0, 1], got "
                         f"{n_rows}, {floor_rows}, {share}")
    return max(floor_rows, int(share * n_rows + 1e-9))


def largest_text_share(rows: Sequence[Assignment]) -> tuple[str, int, float]:
    """The question text in most rows: (text, rows, share of all rows); the first
    such text in row order on a tie."""
    if not rows:
        return "", 0, 0.0
    counts: dict[str, int] = {}
    first: dict[str, str] = {}
    for a in rows:
        k = a.question.text_key
        counts[k] = counts.get(k, 0) + 1
        first.setdefault(k, a.question.question)
    key = max(counts, key=lambda k: counts[k])  # dicts keep row order: first on a tie
    return first[key], counts[key], counts[key] / len(rows)


def assign_images(
    questions: Mapping[str, Sequence[Candidate]],
    images: Mapping[int, Sequence[ClassImage]],
    *,
    images_per_question: int,
    repeat_cap: int,
    num_rows: int,
    seed: int,
    text_cap: int | None = None,
    prior: Sequence[Assignment] = (),
) -> list[Assignment]:
    """Rows in dataset order. Within a class, question j takes images at seeded
    positions j*m, j*m+1, ... (m = images_per_question, wrapping), so questions
    of a class see different images where the class has enough. Rows are taken
    class by class in a seeded round robin, first every question's first image,
    then second images, ...: fewer rows than candidates thins images before
    questions, and classes evenly. A row whose text already fills ``text_cap``
    rows (``prior`` rows, assigned before, count too) is skipped."""
    per_class: dict[str, list[Assignment]] = {}
    for wnid, qs in questions.items():
        if not qs:
            continue
        pool = sorted(images.get(qs[0].label, ()), key=lambda im: im.key)
        if not pool:
            continue
        rng = rng_for(seed, wnid, "images")
        order = [pool[int(i)] for i in rng.permutation(len(pool))]
        m = min(images_per_question, len(order))
        rows: list[Assignment] = []
        for t in range(m):
            for j, q in enumerate(qs):
                rows.append(Assignment(q, order[(j * m + t) % len(order)]))
        per_class[wnid] = rows
    wnids = sorted(per_class)
    class_order = [wnids[int(i)] for i in rng_for(seed, "class-order").permutation(len(wnids))]
    uses: dict[str, int] = {}
    text_uses: dict[str, int] = {}
    for a in prior:
        text_uses[a.question.text_key] = text_uses.get(a.question.text_key, 0) + 1
    out: list[Assignment] = []
    cursors = dict.fromkeys(class_order, 0)
    while len(out) < num_rows and cursors:
        for wnid in list(cursors):
            rows = per_class[wnid]
            while cursors[wnid] < len(rows):
                a = rows[cursors[wnid]]
                cursors[wnid] += 1
                key, text = a.question.cap_key, a.question.text_key
                if uses.get(key, 0) < repeat_cap and (
                        text_cap is None or text_uses.get(text, 0) < text_cap):
                    uses[key] = uses.get(key, 0) + 1
                    text_uses[text] = text_uses.get(text, 0) + 1
                    out.append(a)
                    break
            if cursors[wnid] >= len(rows):
                del cursors[wnid]
            if len(out) >= num_rows:
                break
    return out


def image_bytes(path: Path) -> bytes:
    """The file's bytes when it is a JPEG or PNG that decodes (no re-encoding keeps
    fingerprints stable), else a PNG written with fixed parameters."""
    from PIL import Image

    data = read_bytes_bounded(path, MAX_IMAGE_BYTES, "image", SourceError)
    try:
        with Image.open(io.BytesIO(data)) as im:
            fmt = im.format
            im.load()
            if fmt in ("JPEG", "PNG"):
                return data
            buf = io.BytesIO()
            im.convert("RGB").save(buf, format="PNG", optimize=False, compress_level=6)
            return buf.getvalue()
    except (OSError, ValueError, Image.DecompressionBombError) as exc:
        raise SourceError(f"{path}: cannot decode image ({exc}); replace or remove the file "
                          "and rebuild") from None
