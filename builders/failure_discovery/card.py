"""The failure-discovery dataset card: what was found against whom, how the
MCQ config is derived, and every choice made where seed 004 is silent."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from vlmrobust.builders import card_meta
from vlmrobust.builders.failure_discovery.choices import Choice
from vlmrobust.core.discover_records import DiscoveryRecord

FAMILY = "failure-discovery"
DOCS = "https://github.com/vlmrobust/leaderboard/blob/main/docs/discover.md"
# Where seed 004 is silent (docs/discover.md, "Choices where seed 004 is
# silent"): the defaults of `discover train` / `discover sample`; a trained
# run's discover_run.json records the values it actually used.
SILENT_CHOICES = (
    ("verifier prompt", "ours (docs/discover.md, `VERIFIER_PROMPT`): reasons first, then "
     "`VALID`, `VALID_REASON`, `CORRECT`, `CORRECT_REASON` lines"),
    ("unreadable verdict", "V = C = 0 (`verifier_parsed: false`)"),
    ("missing question slot", "invalid (V = 0), never answered or judged"),
    ("k rewards -> one completion reward", "mean (`--aggregate`)"),
    ("δ_emb of an empty image bank", "1 (`--empty-bank-emb`)"),
    ("what enters the banks", "failures, V = 1 and C = 0 (`--bank`)"),
    ("λ_scale, λ_penalty", "1, 1"),
    ("group size, images per step", "8, 4"),
    ("learning rate, β, ε", "1e-5 (AdamW, linear decay), 0, 0.2"),
    ("steps, sampling temperature", "200, 1.0"),
    ("SD kernel, LD normalisation", "cosine over all-MiniLM-L6-v2 embeddings; prefix entropy "
     "divided by ln n"),
)


def _groups(records: Sequence[DiscoveryRecord], choices: Sequence[Choice]) -> list[str]:
    slots: Counter[tuple[str, ...]] = Counter()
    valid: Counter[tuple[str, ...]] = Counter()
    fail: Counter[tuple[str, ...]] = Counter()
    mcq: Counter[tuple[str, ...]] = Counter()
    key = [(r.method, r.questioner, r.answerer, r.verifier) for r in records]
    for k, r in zip(key, records, strict=True):
        slots[k] += 1
        valid[k] += r.valid
        fail[k] += r.failure
    for c in choices:
        mcq[key[c.source]] += 1
    return [f"| {m} | `{q}` | `{a}` | `{v}` | {slots[k]:,} | {valid[k]:,} | {fail[k]:,} | "
            f"{mcq[k]:,} |" for k in sorted(slots) for m, q, a, v in [k]]


def render_card(records: Sequence[DiscoveryRecord], choices: Sequence[Choice],
                skipped: Mapping[str, int], *, n_options: int) -> str:
    n_fail = sum(r.failure for r in records)
    left = "; ".join(f"{n:,}: {why}" for why, n in sorted(skipped.items())) or "none"
    parts = [
        "# Failure-discovery: questions an RL questioner found a VLM answers wrongly",
        "",
        "What `vlmrobust discover` (seed 004, \"Discovering Failure Modes in Vision-Language "
        "Models using RL\") found: a questioner asks k questions per image, a frozen "
        "**answerer** answers them free-form and a **verifier** (a VLM judge) returns V (the "
        "question is valid) and C (the answer is correct) with justifications.",
        "",
        "**These questions are adversarial to the answerer they were found against** (the "
        "`answerer` column): a questioner trained or prompted to make that model fail chose "
        "them. Its accuracy here is not comparable with another model's, and any model's "
        "accuracy on them is not an estimate of its accuracy on natural questions. Verdicts "
        "are the verifier's (the `verifier` column), not human labels.",
        "",
        "| method | questioner | answerer | verifier | question slots | valid | failures | "
        "MCQ rows |",
        "|---|---|---|---|---|---|---|---|",
        *_groups(records, choices),
        "",
        "## Configs",
        "",
        "- `open` (question kind `open`): one row per question slot, in record order, all of "
        "them (invalid and missing questions too, so QVR and FDR can be recomputed): `image`, "
        "`question` (null for a slot missing from a malformed completion), `answerer_answer`, "
        "`valid`, `correct`, `valid_reason`, `correct_reason`, `verifier_parsed`, "
        "`reference_answer` (below; null when unknown), `skills`, `meta_skill`, `step`, "
        "`method`, `questioner`, `answerer`, `verifier`, `seed`, `completion_id`, `slot`, "
        "`image_file`, `image_sha256`. A failure is a row with `valid` true and `correct` "
        "false. `vlmrobust predict/validate/score` refuse this config (free-form questions "
        "with verdicts are not scored as choices); the leaderboard's Failure modes page "
        "recomputes seed 004's metrics from it.",
        f"- `mcq` (kind `mcq`): {len(choices):,} of the {n_fail:,} verified failures as "
        f"{n_options}-option questions: `question`, `options`, `answer`, `wrong_option` (the "
        "answerer's wrong answer), `open_id` (its `open` row), `question_type`, `meta_skill`, "
        "`method`, `questioner`, `answerer`, `verifier`, `step`, `image_file`. Left out: "
        f"{left}.",
        "",
        "## How the MCQ config is made (choices of this family)",
        "",
        "- **Correct option.** The records carry no reference answer. The reference is the "
        "answer some answerer gave to the same question on the same image (same image bytes, "
        "same question text up to case and spacing) that the verifier judged correct; when "
        "several differ, the most frequent. Build from records of several answerers over the "
        "same questions (`discover sample` with one questioner and seed asks the same "
        "questions whatever the answerer) to obtain references. A failure without one is "
        "left out.",
        f"- **Options.** The reference, the answerer's wrong answer and {n_options - 2} "
        "distractors drawn, with a seed derived per row, from the other answers (right or "
        "wrong) to valid questions of the same type: the meta-skill when the taxonomy gave "
        "one, else the question's first two words. An answer judged correct to the row's own "
        "question (same image, same question) is never a distractor, so exactly one option "
        "is right by the verifier's verdicts; a row left with too few distractors is left "
        "out. No two options are equal after normalisation (case, spacing, final "
        "punctuation). Option texts keep the answerers' "
        "wording, so a reference written by a verbose model may differ in style.",
        "- **Answer positions** are balanced (a seeded permutation of 0..K-1 repeated over "
        "the rows); the other options follow in a per-row seeded order.",
        "",
        "## Choices where seed 004 is silent",
        "",
        f"Defaults of `vlmrobust discover` (table and reasons: [docs/discover.md]({DOCS})); "
        "a trained run records the values it used in its `discover_run.json`:",
        "",
        "| setting | choice |",
        "|---|---|",
        *[f"| {k} | {v} |" for k, v in SILENT_CHOICES],
        "",
        card_meta.common_sections(FAMILY, config="mcq", licences=(
            ("images", "other", "as the images folder the records were made from"),
            ("questions, answers, verdicts", "other", "generated by the models named in each "
             "row; their terms of use apply"))),
    ]
    return "\n".join(parts)
