"""The ImageNet-X paragraph of a dataset card whose imagenet-val rows are scored
per factor: which annotation file, how many prototypes it drops, and how many of
this build's images carry each of seed 001's 10 factors (so a reader sees that a
rare factor rests on few images)."""

from __future__ import annotations

from collections.abc import Iterable

from vlmrobust.core.imagenet_x import NAMED_FACTORS, TOP_FILE, Annotations, load_default


def imagenet_x_section(source_files: Iterable[str], question: str,
                       annotations: Annotations | None = None) -> list[str]:
    """Card lines for the imagenet-val images ``source_files``, answered as
    ``question`` (e.g. "5-option multiple choice"); ``annotations`` default to
    the installed imagenet-x package's top-factor file."""
    ann = annotations if annotations is not None else load_default()
    keys = list(source_files)
    lines = ["## ImageNet-X factors", ""]
    if ann is None:
        return [
            *lines,
            f"`vlmrobust score` reports accuracy per ImageNet-X factor on the {len(keys):,} "
            f"imagenet-val images when the `imagenet-x` package is installed (its `{TOP_FILE}`, "
            "prototypes removed); it was not installed at build time, so the counts per "
            "factor are not given here.", ""]
    counts = ann.counts(keys)
    n_annotated = sum(1 for k in keys if k in ann.factors)
    proto = (f"the {ann.prototypes_removed:,} images of its `{ann.prototypes_file}` removed"
             if ann.prototypes_file else "no prototype list applied")
    lines += [
        f"`vlmrobust score` reports accuracy per factor of variation on the imagenet-val "
        f"rows ({question}) from ImageNet-X's top-factor annotations `{ann.file}` "
        f"(one main factor per image; {proto}, as the `imagenet-x` package's default "
        f"loader does), joined on `source_file`: {n_annotated:,} of this build's "
        f"{len(keys):,} imagenet-val images are annotated. Seed 001's 10 factors and the "
        "images of this build that carry each:",
        "",
        "| factor | images |",
        "|---|---|",
        *[f"| {f} | {counts[f]:,} |" for f in NAMED_FACTORS],
        "",
    ]
    return lines
