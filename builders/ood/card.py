"""The ood dataset card: the sets read, the config layout (ID shared), the row
schema, the predictions format and the scores (seed 001's OOD protocol)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from vlmrobust.builders import card_meta
from vlmrobust.builders.ood.layouts import LAYOUTS

# Sizes of the releases as published (a build reads what is on disk)
PUBLISHED = {"imagenet-val": 50_000, "inaturalist": 10_000, "sun": 10_000, "places": 10_000,
             "textures": 5_640, "imagenet-o": 2_000, "ninco": 5_879}
LICENCES = (
    ("ImageNet val (ILSVRC-2012)", "other", "ImageNet terms of access (non-commercial research)"),
    ("iNaturalist / SUN / Places MOS subsets (Huang & Li 2021)", "other",
     "images under their source datasets' terms (iNaturalist 2017, SUN, Places365); research use"),
    ("Describable Textures Dataset (Cimpoi et al. 2014)", "other", "research use only"),
    ("ImageNet-O (Hendrycks et al. 2021)", "mit", "MIT (images from ImageNet-22k under its terms)"),
    ("NINCO (Bitterwolf et al. 2023)", "other",
     "images under their source datasets' terms as listed in the NINCO release"),
)


def _row(config: str, n: int, limit: int | None, sample: bool, id_config: str) -> str:
    where = "ID" if config == id_config else (
        "OOD: " + LAYOUTS[config].example if config in LAYOUTS else "OOD (embedded sample)")
    pub = PUBLISHED.get(config)
    note = "" if sample or pub is None or n == pub else (
        f"the release has {pub:,}" + (f"; cut to {limit} by --limit" if limit is not None else ""))
    return f"| `{config}` | {where} | {n:,} | {note} |"


def render_card(counts: Mapping[str, int], absent: Sequence[str],
                classes: Mapping[str, Sequence[str]], *, id_config: str, id_note: str, sample: bool,
                limit: int | None, licences: Sequence[tuple[str, str, str]] = ()) -> str:
    absent_line = (f"Not built: {', '.join(f'`{a}`' for a in absent)} (its folder was absent "
                   "under the source root)." if absent else "")
    class_lines = [f"- `{n}`: {len(c)} classes ({', '.join(c[:8])}{' …' if len(c) > 8 else ''})"
                   for n, c in classes.items()]
    parts = [
        "# OOD detection against ImageNet-1k" + (" (embedded sample)" if sample else ""),
        "",
        "Seed 001's OOD-detection axis (\"Toward a Holistic Evaluation of Robustness in CLIP "
        "Models\"): how well a model's confidence over the ImageNet-1k label space separates "
        "ImageNet val images (in-distribution, ID) from images of none of its classes. "
        "Question kind: `ood`.",
        "",
        "| config | rows | images | note |",
        "|---|---|---|---|",
        *[_row(c, n, limit, sample, id_config) for c, n in counts.items()],
        "",
        absent_line,
        "",
        f"**Configs: the ID set is shared.** `{id_config}` holds the ID rows once "
        f"({id_note}; the image's own label when valid, else its first clean label; images "
        "without a valid label are left out); every OOD set is a config holding only its OOD "
        f"rows. Predict and score `{id_config}` together with the OOD configs: each OOD set "
        "is measured against all ID rows scored (an OOD config scored alone is refused). "
        "Every config's label space is ImageNet-1k (`label_spaces/<config>.json`, clean "
        "names, synonyms, wnids).",
        "",
        *(["The embedded sample stands in for these sets with images that ship in Python "
           "packages: ImageNet-class photos of the imagenet-mcq sample as ID, and textures, "
           "astronomy and microscopy images (no ImageNet class) as OOD. Its numbers show the "
           "pipeline works, not how a model ranks on the real sets.", ""] if sample else []),
        "Layouts read (builders/ood/layouts.py; ImageNet val as builders/sources.py reads "
        "it): " + "; ".join(f"`{n}`: {lay.example}" for n, lay in LAYOUTS.items()) + ".",
        "",
        *(["OOD class lists (the sets' class folders: NINCO's classes, DTD's textures; "
           "class-mean AUROC averages over them):",
           *class_lines, ""] if class_lines else []),
        "## Columns",
        "",
        "`id` (`<config>/<path below the set's image folder>`), `image` (the released file, "
        "byte for byte), `label` (ImageNet-1k index; **-1 on OOD rows, which have no "
        "answer**), `is_ood`, `ood_source` (the OOD set; null on ID rows), `ood_class` "
        "(NINCO's class or DTD's texture category; null elsewhere: ImageNet-O's wnid folders "
        "name the class a ResNet-50 was fooled into, not what the image shows), `source_file`.",
        "",
        "## Predictions and scoring",
        "",
        "A prediction gives `logits` over the whole label space (1,000 values in label-space "
        "order) for every row, ID and OOD; `vlmrobust predict` writes them for classifiers "
        "(1,000 ImageNet logits), CLIP (logit scale × cosine to each class prompt, the scale "
        "recorded as `logit_scale` in the metadata) and VLMs with a logit reader. Scores "
        "(higher = more ID): **MCM** for zero-shot CLIP (max softmax of cosine / τ, τ = 1, "
        "the logit scale undone; a CLIP fine-tuned on another set than ImageNet-1k, e.g. "
        "MSCOCO, is still zero-shot here), **MSP** for models trained or fine-tuned on "
        "ImageNet-1k and for VLMs; "
        "max-logit and energy are reported beside them. Metrics per OOD set: **AUROC** (ID "
        "positive, ties counted half, as scikit-learn's `roc_auc_score`), **FPR@95** (the "
        "share of OOD at or above the threshold keeping 95% of ID), and for sets with classes "
        "(NINCO, Textures) the "
        "**class-mean AUROC** (each class's AUROC against all ID, averaged), each with a "
        "two-sample percentile bootstrap CI; top-1 accuracy on the ID rows.",
        "",
        "`mean_auroc` / `mean_fpr95` in scores.json average seed 001 Table IV's sets (\"We "
        "report averaged AUROC and FPR on NINCO, iNaturalist, DTD, Place, SUN\") that the build "
        "has, listed in `mean_sets`; ImageNet-O is reported apart.",
        "",
        *deviation_lines(sample),
        card_meta.common_sections("ood", licences=licences or LICENCES),
    ]
    return "\n".join(parts)


def deviation_lines(sample: bool) -> list[str]:
    """The card's "Deviations from the seed": what seed 001 §V and Table IV
    fix (scores, sets, means) and what this build does beside them."""
    return [
        "## Deviations from the seed", "",
        "- As seed 001 §V: MCM for zero-shot CLIP, MSP \"for models that are trained or "
        "fine-tuned on ImageNet-1K\"; the headline means over NINCO, iNaturalist, DTD, Places "
        "and SUN (Table IV), ImageNet-O apart (Fig. 3).",
        "- **deviation:** VLMs are scored too, by MSP over the label-space logits their reader "
        "gives; the seed detects OOD with CLIP and ImageNet models only.",
        "- **deviation:** a build that lacks some of Table IV's five sets averages those it "
        "has (`mean_sets` names them), so its means are not Table IV's.",
        *(["- **deviation:** the embedded sample's sets are stand-ins (see above), not the "
           "seed's."] if sample else []),
        "",
    ]
