"""Convert an MCQ benchmark file into a vlmrobust dataset directory.

Two passes: the first reads every row, decodes every image and collects every
bad row (by the source's own index); only a clean file gets the second pass,
which streams rows into the atomic writer. A bad file writes nothing.

Columns written: the MCQ core (``id`` = the source's index, ``image``,
``question``, ``options``, ``answer``) plus ``source_index``, ``category``,
``l2_category`` and ``hint`` where the source has them, and ``images`` (every
image in order) when any question has several; such a question's ``image`` is
its images side by side (records.tile). A hint is kept in ``hint`` and put
before the question in ``question`` ("Hint: ...\\nQuestion: ..."), as
VLMEvalKit's prompt shows it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlmrobust.builders.convert.layout import Layout, infer_layout, layout_from_mapping
from vlmrobust.builders.convert.readers import (
    PUBLISHED_MD5,
    Row,
    md5_of,
    parquet_header,
    parquet_rows,
    source_files,
    tsv_header,
    tsv_rows,
)
from vlmrobust.builders.convert.records import McqRecord, RowError, check_image, tile
from vlmrobust.core.errors import SourceError

FORMATS = ("vlmevalkit-tsv", "parquet")
MAX_BYTES = 16 << 30
MAX_FIELD = 1 << 30
MAX_PIXELS = 200_000_000  # MME-RealWorld holds very large photos
MAX_LISTED_BAD = 10


@dataclass(frozen=True)
class ConvertOptions:
    format: str
    source: Path
    out: Path
    name: str | None = None
    mapping: Path | None = None
    md5: str | None = None  # hex digest, or "published" (VLMEvalKit's table)
    max_bytes: int = MAX_BYTES

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ValueError(f"unknown format {self.format!r} (known: {', '.join(FORMATS)})")
        if self.max_bytes < 1:
            raise ValueError("max_bytes must be >= 1")


def _check_md5(files: list[Path], want: str | None) -> dict[str, str]:
    digests = {p.name: md5_of(p) for p in files}
    if want is None:
        return digests
    if len(files) != 1:
        raise SourceError(f"--md5 checks one file; {files[0].parent} holds {len(files)}")
    path = files[0]
    expected = want.lower()
    if expected == "published":
        if path.stem not in PUBLISHED_MD5:
            raise SourceError(f"{path}: no published MD5 for {path.stem!r} (known: "
                              f"{', '.join(PUBLISHED_MD5)}); pass --md5 HEX")
        expected = PUBLISHED_MD5[path.stem]
    if digests[path.name] != expected:
        raise SourceError(f"{path}: MD5 {digests[path.name]} differs from the expected "
                          f"{expected}; download the file again")
    return digests


def _layout_and_rows(opts: ConvertOptions, files: list[Path]
                     ) -> tuple[Layout, Any]:
    where = str(opts.source)
    header = (tsv_header(files[0], MAX_FIELD) if opts.format == "vlmevalkit-tsv"
              else parquet_header(files))
    if opts.mapping is not None:
        import yaml

        raw = yaml.safe_load(opts.mapping.read_text(encoding="utf-8")[:1_000_000])
        layout = layout_from_mapping(raw, str(opts.mapping))
        layout.check_header(header, where)
    else:
        layout = infer_layout(header, where)

    def rows() -> Iterator[Row]:
        if opts.format == "vlmevalkit-tsv":
            for p in files:
                yield from tsv_rows(p, MAX_FIELD)
        else:
            yield from parquet_rows(files, layout.image, layout.index)

    return layout, rows


def _records(layout: Layout, rows: Any, skipped: Counter[str],
             bad: list[RowError] | None) -> Iterator[McqRecord]:
    for row, images in rows():
        if isinstance(images, RowError):  # an image the parquet reader could not take
            if bad is None:
                raise images
            bad.append(images)
            continue
        if layout.skipped(row):
            skipped[" / ".join(f"{c}={row.get(c)}" for c, _ in layout.skip
                               if str(row.get(c, "")).strip())] += 1
            continue
        try:
            rec = layout.parse(row, images)
            if bad is not None:
                for data in rec.images:
                    check_image(data, rec.index, MAX_PIXELS)
        except RowError as exc:
            if bad is None:
                raise
            bad.append(exc)
            continue
        yield rec


def _bad_rows_message(path: Path, bad: list[RowError]) -> str:
    shown = "; ".join(str(e) for e in bad[:MAX_LISTED_BAD])
    more = f" (and {len(bad) - MAX_LISTED_BAD} more)" if len(bad) > MAX_LISTED_BAD else ""
    return (f"{path}: {len(bad)} bad row(s), nothing written: {shown}{more}; "
            "fix or remove these rows")


def convert(opts: ConvertOptions) -> dict[str, Any]:
    """Validate the whole source, then write the dataset directory; returns the manifest."""
    from vlmrobust.core.files.output_guard import check_dataset_output
    from vlmrobust.core.writer import BuildInfo, mcq_features, write_dataset

    # the source (a shard of an earlier dataset, say) must survive the swap of --out
    check_dataset_output(opts.out, "--out", protected=[opts.source, opts.mapping])
    suffix = ".tsv" if opts.format == "vlmevalkit-tsv" else ".parquet"
    try:
        files = source_files(opts.source, suffix)
    except FileNotFoundError as exc:
        raise SourceError(str(exc)) from None
    total = sum(p.stat().st_size for p in files)
    if total > opts.max_bytes:
        raise SourceError(f"{opts.source}: {total} bytes exceeds the {opts.max_bytes}-byte "
                          "bound; raise it with --max-bytes")
    digests = _check_md5(files, opts.md5)
    try:
        layout, rows = _layout_and_rows(opts, files)
        # pass 1: everything is read and checked, nothing is kept
        bad: list[RowError] = []
        skipped: Counter[str] = Counter()
        seen: set[str] = set()
        multi = has_hint = has_cat = has_l2 = False
        n = 0
        for rec in _records(layout, rows, skipped, bad):
            if rec.index in seen:
                bad.append(RowError(rec.index, "index appears twice"))
            seen.add(rec.index)
            multi |= len(rec.images) > 1
            has_hint |= rec.hint is not None
            has_cat |= rec.category is not None
            has_l2 |= rec.l2_category is not None
            n += 1
    except ValueError as exc:
        raise SourceError(str(exc)) from None
    if bad:
        raise SourceError(_bad_rows_message(opts.source, bad))
    if n == 0:
        raise SourceError(f"{opts.source}: no question to convert")

    from datasets import Image, List, Value

    cols: dict[str, Any] = {"source_index": Value("string")}
    if has_cat or layout.category:
        cols["category"] = Value("string")
    if has_l2 or layout.l2_category:
        cols["l2_category"] = Value("string")
    if layout.hint:
        cols["hint"] = Value("string")
    if multi:
        cols["images"] = List(Image())

    def out_rows() -> Iterator[dict[str, Any]]:
        for rec in _records(layout, rows, Counter(), None):
            question = rec.question
            if rec.hint:
                question = f"Hint: {rec.hint}\nQuestion: {rec.question}"
            image = rec.images[0] if len(rec.images) == 1 else tile(rec.images)
            row: dict[str, Any] = {
                "id": rec.index, "image": {"bytes": image, "path": None}, "question": question,
                "options": list(rec.options), "answer": rec.answer, "source_index": rec.index,
            }
            if "category" in cols:
                row["category"] = rec.category or ""
            if "l2_category" in cols:
                row["l2_category"] = rec.l2_category or ""
            if "hint" in cols:
                row["hint"] = rec.hint or ""
            if multi:
                row["images"] = [{"bytes": b, "path": None} for b in rec.images]
            yield row

    name = opts.name or (files[0].stem if not opts.source.is_dir() else opts.source.name)
    extra = {"converted_from": {
        "format": opts.format, "files": digests, "md5_checked": opts.md5 is not None,
        "layout": {k: v for k, v in vars(layout).items() if v},
        "skipped": dict(skipped), "multi_image": multi,
    }}
    card = _card(name, opts, n, skipped, multi, cols)
    info = BuildInfo(name, "source", 0, {name: "md5:" + ",".join(sorted(digests.values()))},
                     extra)
    return write_dataset(opts.out, configs={"default": out_rows()}, features=mcq_features(cols),
                         card=card, info=info)


def _card(name: str, opts: ConvertOptions, n: int, skipped: Counter[str], multi: bool,
          cols: dict[str, Any]) -> str:
    lines = [
        f"# {name} (converted)", "",
        f"{n} multiple-choice questions converted by `vlmrobust convert {opts.format}` from "
        f"`{opts.source.name}`. `id` and `source_index` are the source's own index; "
        "`answer` indexes `options`, which keep the source's letter order (empty letters "
        "dropped).", "",
        "Columns: `id`, `image`, `question`, `options`, `answer`, "
        + ", ".join(f"`{c}`" for c in cols) + ".", "",
    ]
    if "hint" in cols:
        lines += ["`question` starts with the source's hint where it has one "
                  "(`Hint: ...` then `Question: ...`, VLMEvalKit's wording).", ""]
    if multi:
        lines += ["Multi-image questions: `images` holds every image in the source's order; "
                  "`image` shows them side by side, left to right.", ""]
    if skipped:
        lines += ["Left out (not single-answer questions): "
                  + ", ".join(f"{k}: {v}" for k, v in sorted(skipped.items())) + ".", ""]
    return "\n".join(lines)
