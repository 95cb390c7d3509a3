"""The retrieval dataset card: the splits read, the row schema, the predictions
format and how Recall@K is computed (as CLIP_benchmark does)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from vlmrobust.builders import card_meta
from vlmrobust.builders.retrieval.karpathy import LAYOUTS, KarpathySplit, caption_counts

# Karpathy's test splits as published
PUBLISHED = {"flickr30k": (1_000, 5_000), "mscoco": (5_000, 25_010)}
LICENCES = (
    ("Flickr30K images (Young et al. 2014)", "other",
     "Flickr photos under their owners' terms; the Flickr30K terms of use apply (research only)"),
    ("MSCOCO 2014 images (Lin et al. 2014)", "other",
     "Flickr photos under their owners' Creative Commons licences, as listed in COCO's annotations"),
    ("captions and Karpathy's splits", "other",
     "Flickr30K / COCO caption annotations (COCO's: CC BY 4.0); split files by Karpathy & Fei-Fei "
     "2015"),
)


def _count_line(config: str, split: KarpathySplit, limit: int | None) -> str:
    n_img, n_cap = len(split.images), split.n_captions
    pub_img, pub_cap = PUBLISHED[split.source]
    note = "" if (n_img, n_cap) == (pub_img, pub_cap) else (
        f"the published split has {pub_img:,} images and {pub_cap:,} captions; "
        + (f"cut to {limit} images by --limit" if limit is not None
           else "this build read what its split file lists"))
    per = ", ".join(f"{n:,} with {k}" for k, n in caption_counts(split.images).items())
    return f"| `{config}` | {split.source} | {n_img:,} | {n_cap:,} ({per}) | {note} |"


def render_card(found: Mapping[str, KarpathySplit], absent: Sequence[str], *,
                limit: int | None) -> str:
    absent_line = (f"Not built: {', '.join(f'`{a}`' for a in absent)} (its folder was absent "
                   "under the source root)." if absent else "")
    parts = [
        "# Zero-shot image-text retrieval: Flickr30K and MSCOCO 5k (Karpathy test splits)",
        "",
        "Seed 001's retrieval axis (\"Toward a Holistic Evaluation of Robustness in CLIP "
        "Models\"): image→text and text→image Recall@K of an embedding model, over the "
        "test splits of Karpathy & Fei-Fei (2015) that CLIP and CLIP_benchmark report. "
        "Question kind: `retrieval`.",
        "",
        "| config | source | images | captions | note |",
        "|---|---|---|---|---|",
        *[_count_line(c, s, limit) for c, s in found.items()],
        "",
        absent_line,
        "",
        "Layouts read (builders/retrieval/karpathy.py): "
        + "; ".join(f"`{s}`: {lay.example}" for s, lay in LAYOUTS.items())
        + ". Only `split == \"test\"` entries; images in the split file's order.",
        "",
        "## Columns",
        "",
        "One row per image: `id` (`flickr30k-<file stem>` or `mscoco-<cocoid>`), `image` (the "
        "published JPEG, byte for byte), `captions` (list of strings: **every** caption the "
        "split file gives the image, in its order; its `raw` text with white space runs made "
        "one space and the ends stripped — a few COCO images have 6 or 7, as in "
        "CLIP_benchmark's Karpathy-test files), `source`, `source_file` (the file name in "
        "the release) and `source_id`.",
        "",
        "## Predictions and scoring",
        "",
        "A predictions file gives, per row, `image_embedding` (list of D floats) and "
        "`text_embeddings` (one list of D floats per caption, in the row's caption order); "
        "`vlmrobust predict --model clip:...` writes them (captions embedded as they are, no "
        "prompt template). Per config the gallery is every image and every caption of the "
        "config; embeddings are L2-normalised and compared by cosine similarity, computed in "
        "blocks of rows (memory bounded by block × gallery size). As CLIP_benchmark "
        "(`zeroshot_retrieval.py`):",
        "",
        "- **image→text** Recall@K (its `text_retrieval_recall@K`): the share of images with "
        "at least one of their captions among the K captions most similar to the image;",
        "- **text→image** Recall@K (its `image_retrieval_recall@K`): the share of captions "
        "whose image is among the K images most similar to the caption;",
        "- K = 1, 5, 10. Ties are broken by gallery order (CLIP_benchmark's `torch.topk` "
        "leaves them unspecified; the two agree whenever no tie straddles the K-th place).",
        "",
        "Intervals: a percentile bootstrap over images (text→image resamples an image "
        "together with all its captions, which are not independent queries); the gallery "
        "stays whole.",
        "",
        *deviations(short=[c for c, sp in found.items()
                           if (len(sp.images), sp.n_captions) != PUBLISHED[sp.source]]),
        "",
        card_meta.common_sections("retrieval", licences=LICENCES),
    ]
    return "\n".join(parts)


def deviations(*, short: Sequence[str] = (), sample: bool = False) -> list[str]:
    """Seed 001 (§III-IV, §VII) against this build: the seed fixes the sets,
    the splits, cosine scores and Recall@5; every other rule is named here.
    ``short``: configs whose counts differ from the published split."""
    return [
        "## Deviations from the seed",
        "",
        "Seed 001 (§III, IV. Retrieval): \"We evaluate zero-shot retrieval performance on "
        "Flick30K [69] and MSCOCO [70] following the evaluation setup and splits from [71]. As "
        "in [1], we compute the cosine similarity between image and text embeddings as the "
        "imagetext scores. [...] Recall@K is the metric with K = 5.\"",
        "",
        "- K: Recall@5 is the seed's; Recall@1 and @10 are reported beside it (CLIP_benchmark "
        "reports them too).",
        "- Table IV's \"averaged recall@5\" over both sets and both directions is not "
        "computed: each config and direction is reported on its own.",
        "- Captions: the seed does not say how many captions an image contributes; every "
        "caption the split file lists is kept (MSCOCO 5k: 25,010, not 5 × 5,000, as a few "
        "images have 6 or 7; as CLIP_benchmark's files), white space normalised. Captions are embedded as they "
        "are, with no prompt template (the seed names none).",
        "- The seed does not define a hit: image→text counts an image when any of its captions "
        "is among its K nearest, as CLIP_benchmark does; ties in similarity are broken by "
        "gallery order.",
        "- Not in the seed: percentile bootstrap 95% intervals (1,000 resamples of images; "
        "text→image resamples an image with all its captions).",
        *([f"- Counts: {', '.join(f'`{c}`' for c in short)} "
           + ("differs" if len(short) == 1 else "differ") + " from the published split "
           "(see the table above)."] if short else []),
        *(["- **Embedded sample**: packaged photos with captions written for this "
           "project stand in for Flickr30K and MSCOCO; its numbers test the pipeline, not a "
           "model."] if sample else []),
    ]
