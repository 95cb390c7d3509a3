"""The failure-discovery dataset card: what was found against whom, how the
MCQ config is derived, and every choice made where seed 004 is silent."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from vlmrobust.builders import card_meta
from vlmrobust.builders.failure_discovery.choices import Choice
from vlmrobust.builders.failure_discovery.runs import (
    RUN_RECORD,
    SIDECAR_SUFFIX,
    RunInfo,
    SourceRuns,
)
from vlmrobust.core.discover_records import DiscoveryRecord

FAMILY = "failure-discovery"
DOCS = "https://github.com/vlmrobust/leaderboard/blob/main/docs/discover.md"
# Rules of the code, whatever the run (docs/discover.md); a run's own settings
# come from its run record (runs.py), never from the defaults.
FIXED_CHOICES = (
    ("prompts", "ours; seed 004's appendix is not in our copy. Questioner: `QUESTIONER` "
     "(`evaluation/discover/prompts.py`; ConMe baseline: `CONME_DESCRIBE`, `CONME_ASK`); "
     "answerer: `ANSWERER_PROMPT` (`{question}` + \"Answer briefly.\"); verifier: "
     "`VERIFIER_PROMPT` (`evaluation/discover/roles.py`): reasons first, then `VALID`, "
     "`VALID_REASON`, `CORRECT`, `CORRECT_REASON` lines. Texts in docs/discover.md; a run "
     "record holds the exact texts it used (hashes above, texts in `manifest.json`)"),
    ("unreadable verdict", "V = C = 0 (`verifier_parsed: false`)"),
    ("missing question slot", "invalid (V = 0), never answered or judged"),
    ("prefix L (δ_ifreq) and LD", "counts whitespace-separated words (lower-cased, "
     "punctuation stripped), not tokenizer tokens as seed 004's \"first-L-token prefix\""),
    ("GRPO objective", "seed 004's Eq. 1 by default: TRL `loss_type` `grpo` (each "
     "completion's token terms divided by its own length), KL penalty β = 0.04 (the seed "
     "gives no value: DeepSeekMath's, the GRPO paper it cites), advantages over the group's "
     "std (`scale_rewards` `group`); other values are named options (`--loss-type`, "
     "`--beta`, `--scale-rewards`); each run's objective line above"),
    ("max completion length", "in questioner tokens (`--max-completion-length`, default "
     "128); each run's value above"),
    ("taxonomy (`meta_skill`)", "not BERTopic: skills deduplicated with all-MiniLM-L6-v2 "
     "(cosine ≥ 0.9 by default), then SciPy average-linkage agglomerative clustering under "
     "cosine distance into meta-skills (`discover taxonomy`)"),
    ("SD kernel, LD normalisation", "cosine over all-MiniLM-L6-v2 embeddings; prefix entropy "
     "divided by ln n"),
)


def _md(value: Any) -> str:
    """A recorded value inside a code span of a table-free line."""
    text = " ".join(str(value).split()).replace("`", "'")
    return text if len(text) <= 120 else text[:117] + "..."


def _num(value: Any) -> str:
    if value is None:
        return "not recorded"
    if isinstance(value, bool):
        return "on" if value else "off"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _run_line(run: RunInfo, files: Sequence[str]) -> str:
    s = run.settings

    def v(key: str) -> str:
        return _num(s.get(key))

    def code(key: str) -> str:
        return "not recorded" if s.get(key) is None else f"`{_md(s[key])}`"

    def prompt(key: str) -> str:
        text = s.get(key)
        if text is None:
            return "none recorded (a rule role has none)"
        return f"sha256 `{hashlib.sha256(str(text).encode('utf-8')).hexdigest()[:12]}`"

    where = ", ".join(f"`{_md(f)}`" for f in files)
    return (
        f"- {where}: run record `{_md(run.path)}` (sha256 `{run.sha256[:12]}`, status "
        f"{code('status')}, {v('steps_done')} of {v('steps')} steps done). Trained: questioner "
        f"{code('questioner')} against answerer {code('answerer')}, judged by verifier "
        f"{code('verifier')} (the `answerer` column names who answered these records). "
        f"Reward (Eq. 5): λ_scale {v('lambda_scale')}, λ_penalty {v('lambda_penalty')}, "
        f"δ_emb {v('use_emb')}, δ_ifreq {v('use_ifreq')}, k {v('k')}, L {v('prefix_len')} "
        f"words, k rewards -> one by {code('aggregate')}, banks of {code('bank')}, δ_emb of "
        f"an empty bank {v('empty_bank_emb')}, embedder {code('embedder')}. GRPO: group "
        f"size {v('group_size')}, images per step {v('images_per_step')}, learning rate "
        f"{v('learning_rate')} ({code('lr_scheduler')}), β {v('beta')}, ε {v('epsilon')}, "
        f"loss_type {code('loss_type')}, scale_rewards {code('scale_rewards')}, max "
        f"completion length {v('max_completion_length')} tokens, temperature "
        f"{v('temperature')}, seed {v('seed')}, dtype {code('dtype')}, LoRA {v('lora')}, "
        f"vLLM {v('use_vllm')}, torch CPU threads {v('torch_threads')}. Objective: "
        f"{code('objective')}. Prompts: questioner {prompt('questioner_prompt')}, answerer "
        f"{prompt('answerer_prompt')}, verifier {prompt('verifier_prompt')}.")


def run_section(runs: SourceRuns) -> list[str]:
    """One line per source run (records files sharing a run record's bytes),
    then one per records file without a run record."""
    lines = [_run_line(run, files) for run, files in runs.runs]
    lines += [f"- `{_md(f)}`: **no run record** (no `{_md(_sidecar(f))}` beside it, and not "
              f"a train journal with `{RUN_RECORD}` in its folder): the settings its "
              "questions were found with are unknown to this build and not stated here "
              "(`discover sample` of an untrained or API questioner has no training "
              "settings)." for f in runs.without]
    return lines


def _sidecar(rel: str) -> str:
    name = rel.rsplit("/", 1)[-1]
    stem = name[:-len(".jsonl")] if name.endswith(".jsonl") else name.rsplit(".", 1)[0]
    return rel[:len(rel) - len(name)] + stem + SIDECAR_SUFFIX


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


def _mcq_line(n_choices: int, n_fail: int, n_options: int, left: str) -> str:
    if not n_choices:
        return (f"- `mcq`: **not in this build**: none of the {n_fail:,} verified failures "
                f"has a reference answer and distractors (left out: {left}). The records carry "
                "no reference answer; it is taken from another answerer judged correct on the "
                "same question (below), so a single answerer's records give none: add records "
                "of other answerers over the same questions for an `mcq` config. \"How to "
                "evaluate\" below applies to a build that has one.")
    return (f"- `mcq` (kind `mcq`): {n_choices:,} of the {n_fail:,} verified failures as "
            f"{n_options}-option questions: `question`, `options`, `answer`, `wrong_option` (the "
            "answerer's wrong answer), `open_id` (its `open` row), `question_type`, "
            "`meta_skill`, `method`, `questioner`, `answerer`, `verifier`, `step`, "
            f"`image_file`. Left out: {left}.")


def render_card(records: Sequence[DiscoveryRecord], choices: Sequence[Choice],
                skipped: Mapping[str, int], runs: SourceRuns, *, n_options: int) -> str:
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
        _mcq_line(len(choices), n_fail, n_options, left),
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
        "### The runs behind these records",
        "",
        "Each source's settings as its run record states them (`discover train`'s "
        f"`{RUN_RECORD}`; how a records file is matched to one: `{SIDECAR_SUFFIX}` beside "
        "it, or a train journal's own folder); the kept settings and prompts are in "
        "`manifest.json` (`source_runs`):",
        "",
        *run_section(runs),
        "",
        "### Choices of the code, whatever the run",
        "",
        f"Defaults and reasons: [docs/discover.md]({DOCS}).",
        "",
        "| setting | choice |",
        "|---|---|",
        *[f"| {k} | {v} |" for k, v in FIXED_CHOICES],
        "",
        card_meta.common_sections(FAMILY, config="mcq", licences=(
            ("images", "other", "as the images folder the records were made from"),
            ("questions, answers, verdicts", "other", "generated by the models named in each "
             "row; their terms of use apply"))),
    ]
    return "\n".join(parts)
