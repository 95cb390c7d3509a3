"""The demo's failure-discovery stage (seed 004, issue 25 item 6): a few GRPO
steps of the tiny questioner against the planted rule answerer, then the
trained questioner's questions judged and scored.

Everything runs in the planted world of `vlmrobust discover planted`
(evaluation/discover/planted.py): PIL drawings whose answers are read from the
pixels, the answerer ``rule:blind=count`` (wrong exactly on counting
questions), the verifier ``rule:planted`` and the tiny text-only questioner
(evaluation/discover/tiny.py). The same calls as `discover planted`, `discover
train`, `discover sample --skills rule:planted` and `discover evaluate`, in
process so that MiniLM is loaded once. Leaves DIR/discover/: ``images/``,
``questioner/`` (the untrained questioner), ``run/`` (the GRPO run: run record,
journal, trained model), ``records/blind-count.jsonl`` and
``records/blind-color.jsonl`` (the trained questioner's questions, answered by
the answerer it was trained against and by one blind to colour instead, with
the verdicts; each with ``.run.json``, a copy of the run record its questioner
came from, which the dataset card reads) and ``metrics.json`` (QVR, FDR, SD, LD, #Skills per answerer).
``records/`` + ``images/`` are the source layout of the failure-discovery
family (benchmarks/failure-discovery.yaml), which the demo builds next."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class DemoDiscover:
    """The demo's settings (one place): ~20-40 s on a quiet 2-core machine."""

    # 128 planted images so that 12 steps x 4 rarely revisit one (a revisited
    # image's bank makes a repeated failure worth little: δ_emb near 0)
    images: int = 128
    sampled_images: int = 32  # the trained questioner's questions: 32 images x 2
    steps: int = 12
    images_per_step: int = 4
    group_size: int = 8
    # the planted test's rate on the tiny model (docs/discover.md); 1e-5 (the
    # default for real questioners) would not move it in 12 steps
    learning_rate: float = 3e-3
    blind: str = "count"
    second_blind: str = "color"
    samples_per_image: int = 2
    seed: int = 0
    # torch CPU threads, pinned: another count sums floats in another order and
    # samples other questions (docs/discover.md, "Determinism")
    threads: int = 2

    def __post_init__(self) -> None:
        if min(self.images, self.sampled_images, self.steps, self.images_per_step,
               self.samples_per_image) < 1:
            raise ValueError("images, steps, images_per_step, samples_per_image must be >= 1")
        if self.threads < 1:
            raise ValueError("threads must be >= 1")
        if self.group_size < 2 or not self.learning_rate > 0:
            raise ValueError("group_size must be >= 2 and learning_rate > 0")
        if self.second_blind == self.blind:
            raise ValueError("second_blind must differ from blind (it gives the references)")


def complete(folder: Path) -> bool:
    """Whether a previous demo finished this stage (its last file is written last)."""
    return (folder / "metrics.json").is_file()


def run_discover(folder: Path, settings: DemoDiscover = DemoDiscover()) -> list[dict[str, Any]]:
    """Run the stage into ``folder``; returns the metrics rows (one per answerer).
    Training and sampling run on ``settings.threads`` torch threads."""
    from vlmrobust.models.runtime import torch_threads

    with torch_threads(settings.threads):
        return _run(folder, settings)


def _run(folder: Path, s: DemoDiscover) -> list[dict[str, Any]]:
    from vlmrobust.core.files.atomic import write_bytes_atomic, write_text_atomic
    from vlmrobust.evaluation.discover.evaluate import EvaluateConfig, evaluate_rows
    from vlmrobust.evaluation.discover.images import list_images, write_planted_images
    from vlmrobust.evaluation.discover.planted import tag_skills
    from vlmrobust.evaluation.discover.questioner import make_questioner
    from vlmrobust.evaluation.discover.roles import make_answerer, make_verifier
    from vlmrobust.evaluation.discover.sample import SampleConfig, run_sample
    from vlmrobust.evaluation.discover.tiny import make_tiny_questioner
    from vlmrobust.evaluation.discover.train import RUN_RECORD, TrainConfig, run_train
    from vlmrobust.metrics.discovery.reward import RewardConfig
    from vlmrobust.models.encoders.minilm import TextEmbedder, load_minilm

    images = folder / "images"
    write_planted_images(images, s.images, s.seed)
    questioner = folder / "questioner"
    if not (questioner / "config.json").is_file():
        make_tiny_questioner(questioner, seed=s.seed)
    answerer = make_answerer(f"rule:blind={s.blind}")
    verifier = make_verifier("rule:planted")
    embed = TextEmbedder(load_minilm("cpu"))
    config = TrainConfig(steps=s.steps, images_per_step=s.images_per_step,
                         group_size=s.group_size, learning_rate=s.learning_rate,
                         lr_scheduler="constant", max_completion_length=30,
                         save_steps=max(s.steps, 1), seed=s.seed, threads=s.threads,
                         reward=RewardConfig())
    run = folder / "run"
    record = run_train(str(questioner), images, answerer, verifier, run, config, embed,
                       device="cpu", log=lambda *a: None)
    hist = record.get("history") or []
    if len(hist) >= 2:
        n = max(1, len(hist) // 4)

        def mean(key: str, part: list[dict[str, Any]]) -> float:
            # a step without a valid question has no FDR (null), as in the metrics
            vals = [float(h[key]) for h in part if h[key] is not None]
            return sum(vals) / len(vals) if vals else float("nan")

        first, last = hist[:n], hist[-n:]
        print(f"    GRPO {len(hist)} steps (mean of the first / last {n}): reward "
              f"{mean('reward', first):.3f} -> {mean('reward', last):.3f}, FDR "
              f"{mean('fdr', first):.3f} -> {mean('fdr', last):.3f}")
    trained = make_questioner(str(run), k=config.reward.k, strategy="zero-shot", device="cpu",
                              max_new_tokens=30)
    # The same questions (one questioner, one seed) put to two answerers: the
    # one trained against, and one blind to colour instead, whose correct
    # counting answers are the references of the failure-discovery MCQ config
    records = []
    for blind in (s.blind, s.second_blind):
        records += run_sample(
            list_images(images, s.sampled_images), trained, make_answerer(f"rule:blind={blind}"),
            verifier, folder / "records" / f"blind-{blind}.jsonl",
            SampleConfig("rl", seed=s.seed, samples_per_image=s.samples_per_image,
                         step=int(record.get("steps_done", s.steps))),
            skill_tagger=lambda imgs, qs: [tag_skills(q) for q in qs])
        # beside each records file, the run its questioner came from: the
        # failure-discovery card states that run's settings, not defaults
        write_bytes_atomic(folder / "records" / f"blind-{blind}.run.json",
                           (run / RUN_RECORD).read_bytes())
    result = evaluate_rows(records, EvaluateConfig(), embed, None)
    write_text_atomic(folder / "metrics.json", json.dumps(result, indent=2, sort_keys=True) + "\n")
    rows: list[dict[str, Any]] = result["rows"]
    return rows


def summary(folder: Path) -> list[str]:
    """One line per answerer from a finished stage's metrics.json."""
    from vlmrobust.core.files.bounded import MIB, read_json_bounded

    rows = read_json_bounded(folder / "metrics.json", 16 * MIB, "demo metrics").get("rows") or []
    return [_line(r) for r in rows]


def _line(r: dict[str, Any]) -> str:

    def pct(x: Any) -> str:
        return "n/a" if x is None else f"{100 * float(x):.1f}%"

    def num(x: Any) -> str:
        return "n/a" if x is None else f"{float(x):.2f}"

    return (f"{r['method']} | {r['questioner']} -> {r['answerer']} (judge {r['verifier']}): "
            f"{r['n_questions']} questions, {r['n_failures']} failures; QVR {pct(r['qvr'])}, "
            f"FDR {pct(r['fdr'])}, SD {num(r.get('sd'))}, LD {num(r.get('ld'))}")


def build_dataset(folder: Path, target: Path) -> dict[str, Any]:
    """The failure-discovery dataset from this stage's records/ and images/
    (`vlmrobust build failure-discovery --source-root FOLDER`)."""
    from vlmrobust.benchmarks import load_spec_yaml, resolve_spec
    from vlmrobust.builders.families import BuildOptions, get_builder

    spec = resolve_spec("failure-discovery")
    return get_builder("failure-discovery")(load_spec_yaml(spec), spec,
                                            BuildOptions(out=target, source_root=folder))
