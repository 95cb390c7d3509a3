"""What every dataset card shares: the hub metadata in its YAML header (built with
``huggingface_hub``'s :class:`DatasetCardData`), the "How to evaluate" and
"Citation" sections, a per-source licence table, and an offline check of the
header.

``DatasetCard.validate()`` posts the card to the hub (``/api/validate-yaml``), so
it cannot run offline or in tests; :func:`validate_card` checks the header the
same way from what ships with ``datasets`` and ``huggingface_hub``: it parses the
card with :class:`huggingface_hub.DatasetCard`, and checks ``size_categories``
against datasets' own list, ``task_categories`` against its known task ids, the
licence against the hub's licence identifiers, the ``configs`` with datasets'
:class:`MetadataConfigs` and the features under ``dataset_info`` with
:class:`datasets.Features` (so ``ClassLabel`` names round-trip).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vlmrobust.benchmarks.citations import VLMROBUST, for_family
from vlmrobust.core.errors import VlmrobustError


class CardError(VlmrobustError):
    """A dataset card's metadata would be rejected by the hub."""


@dataclass(frozen=True)
class FamilyCard:
    pretty_name: str
    task_categories: tuple[str, ...]
    task_ids: tuple[str, ...]
    source_datasets: tuple[str, ...]
    predict_example: str


FAMILIES: Mapping[str, FamilyCard] = {
    "imagenet-mcq": FamilyCard(
        "ImageNet-MCQ: distribution-shift robustness as 5-way multiple choice",
        ("image-classification", "visual-question-answering", "multiple-choice"),
        ("multiple-choice-qa",),
        ("extended|ILSVRC/imagenet-1k", "extended|imagenet-v2", "extended|imagenet-r",
         "extended|imagenet-sketch", "extended|objectnet", "extended|imagenet-a"),
        "clip:ViT-B-32:openai"),
    "bench-c": FamilyCard(
        "Bench-C: corruption robustness of vision-language models",
        ("visual-question-answering", "multiple-choice"), ("multiple-choice-qa",),
        # the paper's six sources; a build names its own (card_data(source_datasets=))
        ("extended|SEEDBench2-Plus", "extended|LEGO-Puzzles", "extended|MME-RealWorld-Lite",
         "extended|MMT-Bench", "extended|MMStar", "extended|MMBench-dev-en-v11"),
        "vlm:/models/llava"),
    "imagewikiqa": FamilyCard(
        "ImageWikiQA: knowledge about the object in an ImageNet image",
        ("visual-question-answering", "multiple-choice"), ("multiple-choice-qa",),
        ("extended|ILSVRC/imagenet-1k", "extended|wordnet"),
        "pipeline:efficientnet-lite0+minilm"),
    "classification": FamilyCard(
        "Classification over whole label spaces: ImageNet variants, fine-grained sets, 3DCC",
        ("image-classification",), ("multi-class-image-classification",),
        ("extended|ILSVRC/imagenet-1k", "extended|imagenet-v2", "extended|imagenet-r",
         "extended|imagenet-sketch", "extended|objectnet", "extended|imagenet-a",
         "extended|oxford-flowers102", "extended|stanford-cars", "extended|caltech101"),
        "classifier:efficientnet-lite0"),
    "failure-discovery": FamilyCard(
        "Failure-discovery: questions an RL questioner found a VLM answers wrongly (seed 004)",
        ("visual-question-answering", "multiple-choice"), ("multiple-choice-qa",),
        ("original",), "vlm:/models/llava"),
    "cue-conflict": FamilyCard(
        "Cue-conflict: shape vs texture bias over 16 categories",
        ("image-classification",), ("multi-class-image-classification",),
        ("extended|ILSVRC/imagenet-1k",),
        "clip:ViT-B-32:openai"),
    "ood": FamilyCard(
        "OOD detection against ImageNet-1k: iNaturalist, SUN, Places, Textures, ImageNet-O, NINCO",
        ("image-classification",), ("multi-class-image-classification",),
        ("extended|ILSVRC/imagenet-1k", "extended|imagenet-o", "extended|ninco"),
        "clip:ViT-B-32:openai"),
    "retrieval": FamilyCard(
        "Zero-shot image-text retrieval: Flickr30K and MSCOCO 5k (Karpathy test splits)",
        ("image-to-text", "text-to-image"), (),
        ("extended|nlphuji/flickr30k", "extended|mscoco"),
        "clip:ViT-B-32:openai"),
}
# The hub's licence identifiers (https://huggingface.co/docs/hub/repositories-licenses)
# that sources of these datasets use; "other" needs license_name and license_link.
HUB_LICENSES = frozenset({
    "apache-2.0", "mit", "bsd-2-clause", "bsd-3-clause", "cc0-1.0", "cc-by-2.0", "cc-by-3.0",
    "cc-by-4.0", "cc-by-sa-3.0", "cc-by-sa-4.0", "cc-by-nc-2.0", "cc-by-nc-4.0",
    "cc-by-nc-sa-4.0", "cc-by-nc-nd-4.0", "gpl-3.0", "lgpl-3.0", "openrail", "unlicense",
    "other", "unknown",
})
# Images keep their sources' terms (ImageNet's are research-only): the dataset as a
# whole is "other", explained per source in the card's licence section.
LICENSE_NAME = "per-source"
LICENSE_LINK = "README.md"


def size_category(n: int) -> str:
    """The hub's size bucket for ``n`` rows.

    >>> size_category(999), size_category(1000), size_category(120_000)
    ('n<1K', '1K<n<10K', '100K<n<1M')
    """
    if n < 0:
        raise ValueError("n must be >= 0")
    edges = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
             (1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M"),
             (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B"))
    return next((label for edge, label in edges if n < edge), "1B<n<10B")


def card_data(family: str, num_rows: int, *, sample: bool, features: Any = None,
              source_datasets: Sequence[str] | None = None) -> Any:
    """The YAML header fields of ``family``'s card as a ``DatasetCardData``
    (``configs`` are added by the writer)."""
    from huggingface_hub import DatasetCardData

    fam = FAMILIES[family]
    sources = list(source_datasets) if source_datasets else list(fam.source_datasets)
    extra: dict[str, Any] = {}
    if features is not None:
        extra["dataset_info"] = {"features": features._to_yaml_list()}
    return DatasetCardData(
        language=["en"], license="other", license_name=LICENSE_NAME, license_link=LICENSE_LINK,
        annotations_creators=["machine-generated"], language_creators=["machine-generated"],
        multilinguality=["monolingual"], size_categories=[size_category(num_rows)],
        source_datasets=sources, task_categories=list(fam.task_categories),
        task_ids=list(fam.task_ids),
        pretty_name=fam.pretty_name + (" (embedded sample)" if sample else ""),
        tags=["robustness", "distribution-shift", "vision-language-models", "vlmrobust"],
        **extra)


def header(family: str, *, sample: bool, features: Any = None,
           source_datasets: Sequence[str] | None = None,
           ) -> Callable[[Mapping[str, int]], dict[str, Any]]:
    """For :func:`vlmrobust.core.writer.write_dataset`: the header fields once the
    row counts are known."""
    def fields(counts: Mapping[str, int]) -> dict[str, Any]:
        data: dict[str, Any] = card_data(family, sum(counts.values()), sample=sample,
                                         features=features,
                                         source_datasets=source_datasets).to_dict()
        return data
    return fields


def common_sections(family: str, *, licences: Sequence[tuple[str, str, str]] = (),
                    config: str | None = None) -> str:
    """"How to evaluate" (the three commands, with ``--config config`` when
    given), "Citation" (BibTeX of the papers the family builds on) and, given
    ``(source, licence, note)`` rows, "Licences"."""
    fam = FAMILIES[family]
    cfg = "" if config is None else f" --config {config}"
    bib = "\n\n".join(c.bibtex for c in for_family(family))
    lines = [
        "## How to evaluate",
        "",
        "Predict (the reference evaluator writes option logits with their metadata, the "
        "dataset's fingerprint included, embedded in the parquet file), score, then submit "
        "to the leaderboard:",
        "",
        "```bash",
        f"vlmrobust predict --model {fam.predict_example} --dataset DIR{cfg} "
        f"--out runs/my-model/{family}/predictions.parquet",
        f"vlmrobust score --dataset DIR{cfg} --predictions runs/my-model/{family}/predictions.parquet "
        "--out scores.json",
        "vlmrobust submit --submissions submissions --model-id my-model --dataset DIR "
        f"--predictions runs/my-model/{family}/predictions.parquet",
        "```",
        "",
        "Your own code may write the predictions instead: one row per dataset row with `id` "
        "and `logits` (one float per option, in the dataset's option order). Their metadata "
        "must name this build's fingerprint (`fingerprint` in `manifest.json`): "
        "`vlmrobust.write_predictions(DIR, ids, logits, model=..., family=..., out=...)` "
        "embeds it; a JSONL file carries it in a `<file>.meta.yaml` sidecar. Predictions "
        "without it are refused.",
        "",
    ]
    if licences:
        lines += ["## Licences", "", "| source | licence | note |", "|---|---|---|"]
        lines += [f"| {s} | {lic} | {note} |" for s, lic, note in licences]
        lines += ["", "The dataset's `license: other` means: each row keeps the terms of its "
                      "source, as listed here.", ""]
    lines += ["## Citation", "", "If you use this dataset, please cite vlmrobust:", "",
              "```bibtex", VLMROBUST.bibtex, "```", "",
              "and the papers this benchmark builds on:", "",
              "```bibtex", bib, "```", ""]
    return "\n".join(lines)


def validate_card(text: str) -> dict[str, Any]:
    """Check a README.md's YAML header offline, as the hub's validate-yaml would;
    return the parsed metadata. Raises :class:`CardError` listing every problem."""
    from datasets.utils.metadata import MetadataConfigs, known_task_ids
    from huggingface_hub import DatasetCard

    try:
        card = DatasetCard(text, ignore_metadata_errors=False)
    except Exception as exc:
        raise CardError(f"README.md: YAML header does not parse ({exc})") from None
    data = card.data.to_dict()
    problems: list[str] = []
    sizes = _size_categories()
    for key in ("license", "task_categories", "size_categories", "pretty_name",
                "source_datasets", "configs"):
        if not data.get(key):
            problems.append(f"missing {key}")
    lic = data.get("license")
    for item in lic if isinstance(lic, list) else [lic]:
        if item is not None and item not in HUB_LICENSES:
            problems.append(f"license {item!r} is not a hub licence identifier")
    if lic == "other" and not (data.get("license_name") and data.get("license_link")):
        problems.append("license 'other' needs license_name and license_link")
    for t in data.get("task_categories") or []:
        if t not in known_task_ids:
            problems.append(f"task_categories: unknown task {t!r}")
    for s in data.get("size_categories") or []:
        if s not in sizes:
            problems.append(f"size_categories: {s!r} is not one of {sizes}")
    if not isinstance(data.get("pretty_name", ""), str):
        problems.append("pretty_name must be a string")
    src = data.get("source_datasets") or []
    if not isinstance(src, list) or not all(isinstance(s, str) and s for s in src):
        problems.append("source_datasets must be a list of strings")
    try:
        configs = MetadataConfigs.from_dataset_card_data(card.data)
        if not configs:
            problems.append("configs: none parsed")
    except Exception as exc:
        problems.append(f"configs: {exc}")
    info = data.get("dataset_info")
    if info is not None:
        try:
            from datasets import Features

            Features._from_yaml_list(info["features"])
        except Exception as exc:
            problems.append(f"dataset_info.features: {exc}")
    if problems:
        raise CardError("README.md: " + "; ".join(problems) + "; fix builders/card_meta.py")
    return data


def _size_categories() -> list[str]:
    from importlib.resources import files

    raw = files("datasets.utils.resources").joinpath("size_categories.json").read_text()
    return list(json.loads(raw))
