"""The classification dataset card: configs, label spaces, the layouts read,
and which numbers are over K options and which over the whole label space."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from vlmrobust.builders import card_meta
from vlmrobust.builders.classification.sources import VariantSource
from vlmrobust.builders.classification.spec import ClassificationSpec

LAYOUTS = {
    "imagenet-val": "class folders `nXXXXXXXX/` or the flat val files with their label file "
                    "(builders/sources.py): all 50,000 images, original labels; the "
                    "`imagenet-val-clean` config: Kisel et al.'s `clean_validation.csv` when "
                    "present, else ReaL",
    "imagenet-v2": "`imagenetv2-<release>-format-val/<0..999>/` (the manifest names the folder read)",
    "imagenet-r": "`imagenet-r/<wnid>/` (200 classes)",
    "imagenet-a": "`imagenet-a/<wnid>/` (200 classes)",
    "imagenet-sketch": "`imagenet-sketch/[sketch/]<wnid>/`",
    "objectnet": "`objectnet-1.0/{images/<folder>/, mappings/}`: the 113 classes that map to "
                 "ImageNet-1k, each scored over its ImageNet group (max)",
    "flowers102": "`flowers102/{jpg/, imagelabels.mat, setid.mat}`, test split (`tstid`)",
    "stanford-cars": "`stanford_cars/{devkit/cars_meta.mat, cars_test_annos_withlabels.mat, "
                     "cars_test/}`, test split",
    "caltech101": "`caltech101/101_ObjectCategories/<class>/` without BACKGROUND_Google; "
                  "test split as the manifest's `caltech_split` names it",
    "imagenet-vid-robust": "`imagenet-vid-robust/{metadata/pmsets.json, metadata/labels.json, "
                           "misc/}`: anchors and perturbed frames, `pmset` = anchor",
    "imagenet-d": "`ImageNet-D/<split>/<class_dir>/` + `imgnet_d2imgnet_id.txt` (113 classes)",
    "3dcc": "`3dcc/<corruption>/<severity>/<wnid>/` (ImageNet-3DCC), one config per "
            "corruption x severity",
}
LICENCES = (
    ("ImageNet val / V2 / R / Sketch / A, 3DCC, ImageNet-Vid-Robust, ImageNet-D", "other",
     "ImageNet's terms of access (non-commercial research) for ImageNet-derived images; "
     "V2/R/Sketch/A code and annotations MIT"),
    ("ObjectNet", "other", "ObjectNet licence: no training on it, research use"),
    ("Flowers102, StanfordCars, Caltech101", "other", "research use as their pages state"),
)


def deviation_lines(spec: ClassificationSpec, sources: Sequence[VariantSource]) -> list[str]:
    """The card's "Deviations from the seed" section: this build's protocol
    choices against seeds 001 and 002, each with the spec key that names it."""
    variants = {s.variant for s in sources}
    split = next((s.notes.get("caltech_split") for s in sources if s.variant == "caltech101"), None)
    lines = ["## Deviations from the seed", ""]
    lines.append(
        "- Label texts (`class_names`): " + (
            "CLIP templates and VLM prompts write OpenAI CLIP's ImageNet class names (the "
            "label space's `text`, where it differs from the unique display `name`), as seeds "
            "001 and 002 do; the names come from the package table's `clip_name` column "
            "(clip-benchmark 1.6.2, equal to open_clip's `IMAGENET_CLASSNAMES`)."
            if spec.class_names == "openai" else
            "**deviation:** prompts write the curated clean names (`class_names: curated`); "
            "the seeds write OpenAI CLIP's names (19 of 1,000 differ, e.g. \"kayak\" for "
            "OpenAI's \"canoe\")."))
    if "imagenet-val" in variants:
        lines.append("- ImageNet val: `imagenet-val` is all 50,000 images with their original "
                     "ILSVRC-2012 labels, as the seeds score it; `imagenet-val-clean` (when "
                     "built) is the clean-label subset (spec `clean_labels`), **not** the seeds' "
                     "protocol: its numbers are not comparable with the seeds' tables.")
    if split is not None:
        lines.append("- Caltech101 test split (`caltech_split`): " + {
            "seed-list": "the seed authors' list (`caltech.jsonl`, 4,331 test images), as seed "
                         "002 counts it.",
            "half": "**deviation:** per class floor(n/2) images by a seeded permutation (4,310 "
                    "on the full release); seed 002's 4,331 are its authors' random half, "
                    "whose list (`caltech.jsonl`) was not in the source root.",
            "first30": "**deviation:** all but the first 30 images per class (5,647 on the full "
                       "release), the 30-per-class protocol; seed 002 tests on 4,331."}[split])
    if "3dcc" in variants:
        lines.append("- 3DCC: one config per corruption x severity read (`3dcc-<corruption>-"
                     "<severity>`, up to 3DCC's 12 corruptions); seed 001 evaluates six (Fig. 8: "
                     "fog_3d, near_focus, z_motion_blur, flash, xy_motion_blur, far_focus) and "
                     "Table IV's \"3D robustness\" is their mean accuracy at severity 5, which "
                     "the leaderboard's Holistic page computes from these configs; the other "
                     "corruptions are extra, not in the seed's numbers.")
    lines.append("- VLM classifier-free guidance (evaluator, `likelihood:cfg=T` / `cfg-avg=T`): "
                 "**deviation:** seed 002 writes t·prob(class | image, prompt) + (1 − t)·"
                 "prob(class | prompt); it is computed over log-probabilities with t unbounded "
                 "above, as its reference [38]. The seed names no t: the headline is the T the "
                 "run was asked for; scores.json's `cfg` block adds accuracy at each t of a grid "
                 "(0, 0.5, 1, 1.5, 2, 3, 5) from the same run, and the grid's best t, marked "
                 "optimistic (chosen on the scored rows).")
    lines += [
        "- Text answers (seed 002 §2.3's inclusion rule, the headline): synonyms of an ImageNet "
        "class are its WordNet lemmas (the ILSVRC label strings of App. A.3), nothing else; a "
        "name is found on whole words, case-, accent- and punctuation-blind, with a plural "
        "ending allowed (the seed does not say how it tested inclusion). The strict matcher is "
        "a named option (`text_rules.strict`, `strict+synonyms`), never the headline."]
    return [*lines, ""]


def render_card(spec: ClassificationSpec, sources: Sequence[VariantSource],
                counts: Mapping[str, int], k_configs: Mapping[str, tuple[int, int]], *,
                absent: Sequence[str], sample: bool, limit: int | None,
                imagenet_x_lines: Sequence[str] = ()) -> str:
    base_rows = []
    for s in sources:
        ids = sum(1 for c in s.space.classes if c.imagenet_ids)
        base_rows.append(f"| `{s.config}` | {counts[s.config]:,} | {len(s.space)} (`label_spaces/"
                         f"{s.config}.json`) | whole label space | "
                         f"{'yes' if ids == len(s.space) else 'no'} |")
    k_rows = [f"| `{c}` | {k} candidates per row (`candidates`) | {n:,} |"
              for c, (k, n) in sorted(k_configs.items())]
    variants = sorted({s.variant for s in sources if not s.variant.startswith("sample-")}
                      | {"imagenet-d" for s in sources if s.variant.startswith("imagenet-d-")})
    layout_lines = [f"- `{v}`: {LAYOUTS[v]}" for v in variants if v in LAYOUTS]
    if sample:
        layout_lines = ["- the embedded sample (builders/sample/sample.csv): `sample-photo` are "
                        "real photos shipped in Python packages, `sample-rendition` emoji "
                        "renditions; licences per image in sample.csv"]
    cut = f" Each config holds at most {limit} images (`--limit`)." if limit else ""
    if spec.images_per_config and not sample:
        cut += f" The spec keeps a seeded {spec.images_per_config:,} images per config."
    parts = [
        "# Classification over whole label spaces (seeds 001 and 002)",
        "",
        "Question kind: `classification`. Each row is an image and its `label`, an index into its "
        "config's label space; the label space (class names, synonyms, wnids, the ImageNet-1k "
        "classes each class stands for) is stored **once per config** in "
        "`label_spaces/<config>.json`, recorded with its sha256 in `manifest.json` and covered by "
        "the fingerprint; rows never repeat class names." + cut,
        "",
        "| config | images | classes | a prediction is over | 1000-way classifiers |",
        "|---|---|---|---|---|",
        *base_rows,
        "",
        "## Which numbers are over what",
        "",
        "- A **full config** (`candidates` empty): logits over the **whole label space**, in "
        "label-space order. Top-1 accuracy, per-class accuracy, ECE and NLL are over all its "
        "classes (1,000 for ImageNet val / V2 / Sketch / 3DCC), as seed 001 (Table IV) and "
        "seed 002's closed world measure them.",
        "- A **K-config** (`<config>-k<K>`: seed 002's label-set-size sweep; "
        f"`imagenet-d-<split>-{spec.hard_options.k}opt`: seed 001 §IX): logits over the row's "
        "**K candidates**, in `candidates` order; every number is over K options, like the "
        "5-option imagenet-mcq family, and is not comparable with the full configs'.",
        "- **ImageNet-Vid-Robust** (`pmset`): besides top-1 over its frames, the scorer reports "
        "Shankar et al.'s **benign accuracy** (right on the anchor frame) and **pm-k accuracy** "
        "(right on every frame of the anchor's perturbation set, the frames `pmsets.json` lists "
        "within ±10 frames: pm-10) over the anchors, a frame being right when the top class is "
        "any of its `valid_labels`; their intervals resample anchors, not frames.",
        "- `accuracy_valid_labels` (rows with several `valid_labels`: ImageNet val's clean "
        "labels, Vid-Robust's): the top class counts as right when it is any valid label "
        "(ImageNet-ReaL's rule); `accuracy` stays against `label`.",
        "",
        *(["| K-config | options | images |", "|---|---|---|", *k_rows, ""] if k_rows else []),
        "Label-set-size candidates: K - 1 distractors drawn uniformly without replacement among "
        "the classes not valid for the image, the label at a uniform position, from a generator "
        "seeded per row by (seed, config, image key); a label-set-size config holds "
        + (f"a seeded {spec.label_set_images:,} of its full config's images (the same for "
           "every K)" if spec.label_set_images else "every image of its full config")
        + ". ImageNet-D's candidates: the label and the "
        f"selection model's ({spec.hard_options.selector}) K - 1 highest-scoring wrong classes "
        "(each class scored by the max over its ImageNet group), in a seeded order. "
        "**Deviation:** ImageNet-D's release ships its own 4-option questions (`questions/` "
        "CSVs, distractors from its own selection models); they are not read: the distractors "
        "here are recomputed with the selector named above, so the 4-option accuracies are "
        "not the published question set's.",
        "",
        "## How models read a label space (the evaluator's defaults)",
        "",
        "- CLIP (`clip:...`): argmax over the label space of logit_scale × cosine to each "
        "class's text embedding, prompt `photo-period` (\"a photo of a {class}.\", seed 002's "
        "template, no ensembling) by default; `--prompt openai-80` averages the 80 OpenAI "
        "ImageNet templates (seed 001's default; its §X-B sets `single`, `mcm-5` and "
        "`openai-30`, a stand-in for its unpublished 30, beside it). The prompt id is recorded "
        "with the predictions. Class texts are the label space's `text` (see Deviations).",
        "- ImageNet classifiers: their 1,000 logits, one per class of the label space as the "
        "max over the class's ImageNet group (`imagenet_ids`); spaces without ImageNet ids "
        "(Flowers102, StanfordCars, Caltech101) cannot be read by them.",
        "- VLMs: `likelihood:*` over every class name, closed-world generation with every name "
        "in the prompt as seed 002 §2.3 words it (\"What type of object is in this photo? Choose "
        "one from <class A>, <class B>, ...\"), in a random order per row seeded by the row id "
        "(Table 1's; `--class-order fixed`: label-space order), or open-world generation; "
        "`--prompt identify|main-object` asks by the seed's two other wordings and `*-cot` adds "
        "its chain of thought. A generated "
        "answer is right, in either world, when it **includes the class's label text** (the name "
        "the prompts write; seed 002 §2.3: "
        "\"whether the ground-truth label is included in the VLM generation\"; naming other "
        "classes as well does not count against it): `accuracy`, `text_rule: inclusion`, seed "
        "002 Table 1. scores.json's `text_rules` gives the accuracy under every rule: "
        "`inclusion+synonyms` (the class name or one of its synonyms, Table 8; "
        "`synonym_gain` is its Δ), `strict` and `strict+synonyms` (the project's matcher: the "
        "one class the text answers, so a text naming two classes answers none). On ImageNet-D's "
        "K-option configs `--mode letter` asks seed 001 §IX's LLaVA prompt (`llava-imagenet-d`) "
        "by default.",
        "- VLM classifier-free guidance (`likelihood:cfg=T` summed, `likelihood:cfg-avg=T` "
        "averaged token log-probs; Table 2's \"Prob Inference (Avg) w/ CFG\"): "
        "T·log p(class | image, prompt) + (1 − T)·log p(class | prompt), any T >= 0.",
        "",
        *imagenet_x_lines,
        *deviation_lines(spec, sources),
        "## Layouts read",
        "",
        *layout_lines,
        *([f"- not built (no folder under the source root): {', '.join(absent)}"] if absent else []),
        "",
        "## Columns",
        "",
        "`id` (`<config>/<source file>`), `image` (the source file's bytes), `label`, "
        "`candidates` (empty in a full config), `valid_labels` (every valid label, `label` "
        "first), `variant`, `source_file`; `corruption` / `severity` (3DCC) and `pmset` "
        "(Vid-Robust: the anchor frame of the row's perturbation set) where built. A text answer "
        "is read against the class names (and synonyms) of the label space (of the candidates "
        "in a K-config).",
        "",
        card_meta.common_sections("classification", licences=LICENCES),
    ]
    return "\n".join(parts)
