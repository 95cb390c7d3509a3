"""`vlmrobust discover train` and `discover taxonomy` (the GRPO run and the
skill taxonomy; docs/discover.md)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def register_train(cmd: Any) -> None:
    from vlmrobust.cli.discover.options import role_args
    from vlmrobust.evaluation.discover.train import LOSS_TYPES, TrainConfig
    from vlmrobust.metrics.discovery.reward import RewardConfig

    t, r = TrainConfig(), RewardConfig()
    p = cmd.add_parser("train", help="GRPO on the questioner with the Eq. 5 reward (TRL)")
    p.add_argument("--questioner", required=True, help="model folder to train")
    role_args(p)
    p.add_argument("--out", type=Path, required=True,
                   help="run folder (same command again: resume from its last checkpoint)")
    p.add_argument("--steps", type=int, default=t.steps)
    p.add_argument("--images-per-step", type=int, default=t.images_per_step)
    p.add_argument("--group-size", type=int, default=t.group_size, help="GRPO group (G)")
    p.add_argument("--lr", type=float, default=t.learning_rate)
    p.add_argument("--lr-scheduler", choices=("linear", "constant", "cosine"),
                   default=t.lr_scheduler)
    p.add_argument("--beta", type=float, default=t.beta,
                   help="KL coefficient of Eq. 1 (seed 004 gives none; default DeepSeekMath's "
                   "0.04; 0 drops the KL term and the reference model)")
    p.add_argument("--epsilon", type=float, default=t.epsilon, help="PPO clip")
    p.add_argument("--temperature", type=float, default=t.temperature)
    p.add_argument("--max-completion-length", type=int, default=t.max_completion_length)
    p.add_argument("--loss-type", default=t.loss_type, choices=LOSS_TYPES,
                   help="TRL loss_type (grpo: Eq. 1, each completion normalised by its length)")
    p.add_argument("--scale-rewards", default=t.scale_rewards, choices=("group", "batch", "none"),
                   help="advantage scaling (group: Eq. 1, the group's std)")
    p.add_argument("--lora", action="store_true", help="train LoRA adapters (peft), merged at the end")
    p.add_argument("--lora-r", type=int, default=t.lora_r)
    p.add_argument("--lora-alpha", type=int, default=t.lora_alpha)
    p.add_argument("--save-steps", type=int, default=t.save_steps)
    p.add_argument("--dtype", choices=("float32", "bfloat16"), default=t.dtype,
                   help="weights and training precision (bfloat16 on GPUs)")
    p.add_argument("--threads", type=int, default=t.threads,
                   help="torch CPU threads (default: torch's choice); a run repeats bit for "
                   "bit only with the same count (recorded as torch_threads)")
    p.add_argument("--use-vllm", action="store_true",
                   help="generate with a colocated vLLM engine (TRL; needs a GPU and vllm)")
    p.add_argument("--lambda-scale", type=float, default=r.lambda_scale)
    p.add_argument("--lambda-penalty", type=float, default=r.lambda_penalty)
    p.add_argument("--prefix-len", type=int, default=r.prefix_len, help="L of δ_ifreq")
    p.add_argument("--empty-bank-emb", type=float, default=r.empty_bank_emb,
                   help="δ_emb of an image with no banked failure")
    p.add_argument("--aggregate", choices=("mean", "sum"), default=r.aggregate,
                   help="k question rewards -> one completion reward")
    p.add_argument("--bank", choices=("failures", "valid"), default=r.bank)
    p.add_argument("--no-ifreq", action="store_true", help="ablation: drop δ_ifreq")
    p.add_argument("--no-emb", action="store_true", help="ablation: drop δ_emb")
    p.set_defaults(func=run_train)


def run_train(args: argparse.Namespace) -> int:
    import trl  # noqa: F401  (first: a missing extra is named before any work)

    from vlmrobust.cli.discover.options import make_roles
    from vlmrobust.core.errors import VlmrobustError
    from vlmrobust.evaluation.discover.train import TrainConfig, check_run_folder
    from vlmrobust.evaluation.discover.train import run_train as train
    from vlmrobust.metrics.discovery.reward import RewardConfig
    from vlmrobust.models.encoders.minilm import TextEmbedder, load_minilm

    try:
        reward = RewardConfig(k=args.k, prefix_len=args.prefix_len,
                              lambda_scale=args.lambda_scale,
                              lambda_penalty=args.lambda_penalty,
                              empty_bank_emb=args.empty_bank_emb, aggregate=args.aggregate,
                              bank=args.bank, use_emb=not args.no_emb,
                              use_ifreq=not args.no_ifreq)
    except ValueError as exc:
        raise VlmrobustError(f"reward settings: {exc}") from None
    config = TrainConfig(
        steps=args.steps, images_per_step=args.images_per_step, group_size=args.group_size,
        learning_rate=args.lr, lr_scheduler=args.lr_scheduler, beta=args.beta, epsilon=args.epsilon,
        temperature=args.temperature, max_completion_length=args.max_completion_length,
        loss_type=args.loss_type, scale_rewards=args.scale_rewards, lora=args.lora,
        lora_r=args.lora_r, lora_alpha=args.lora_alpha, save_steps=args.save_steps,
        dtype=args.dtype, use_vllm=args.use_vllm, threads=args.threads,
        seed=args.seed, reward=reward)
    check_run_folder(args.out, Path(args.questioner), args.images)  # before any model loads
    answerer, verifier = make_roles(args)
    embed = TextEmbedder(load_minilm(args.device))
    record = train(args.questioner, args.images, answerer, verifier, args.out, config, embed,
                   limit=args.limit, device=args.device)
    hist = record.get("history") or []
    if hist:
        first, last = hist[0], hist[-1]
        def fdr(h: dict[str, Any]) -> str:
            return "n/a" if h["fdr"] is None else f"{h['fdr']:.3f}"

        print(f"reward {first['reward']:.3f} -> {last['reward']:.3f}, "
              f"FDR {fdr(first)} -> {fdr(last)} over {len(hist)} steps")
    print(f"wrote {args.out} ({record['steps_done']} steps)")
    return 0


def register_taxonomy(cmd: Any) -> None:
    from vlmrobust.evaluation.discover.taxonomy import TaxonomyConfig

    tx = TaxonomyConfig()
    p = cmd.add_parser("taxonomy", help="skills per question, dedup, clusters, meta-skills")
    p.add_argument("records", type=Path, help="records file (.jsonl)")
    p.add_argument("--out", type=Path, required=True,
                   help="folder: tagged records (records.jsonl) and taxonomy.json")
    p.add_argument("--tagger", required=True,
                   help="rule:planted, or vlm:DIR_OR_HUB_ID / endpoint:NAME (asked for skills)")
    p.add_argument("--tagger-url", default=None, help="base URL of the tagger's server")
    p.add_argument("--images", type=Path, default=None,
                   help="the images folder, so that a model tagger sees each image")
    p.add_argument("--namer", default=None,
                   help="model that names clusters (vlm:/endpoint:); default: the most "
                   "frequent skill of the cluster")
    p.add_argument("--namer-url", default=None)
    p.add_argument("--api-key-env", default=None)
    p.add_argument("--device", default=None)
    p.add_argument("--dedup-threshold", type=float, default=tx.dedup_threshold,
                   help="skills whose MiniLM cosine is at least this are merged")
    p.add_argument("--meta-skills", type=int, default=tx.meta_skills,
                   help="number of meta-skill clusters")
    p.add_argument("--failures-only", action="store_true",
                   help="tag only failures (V = 1, C = 0) instead of every valid question")
    p.set_defaults(func=run_taxonomy)


def run_taxonomy(args: argparse.Namespace) -> int:
    import sentence_transformers  # noqa: F401  (MiniLM's stack: a light install is told the extra)

    from vlmrobust.evaluation.discover.taxonomy import TaxonomyConfig, build_taxonomy

    cfg = TaxonomyConfig(dedup_threshold=args.dedup_threshold, meta_skills=args.meta_skills,
                         failures_only=args.failures_only)
    result = build_taxonomy(args.records, args.out, args.tagger, cfg, tagger_url=args.tagger_url,
                            namer=args.namer, namer_url=args.namer_url,
                            api_key_env=args.api_key_env, device=args.device,
                            images=args.images)
    print(json.dumps({k: result[k] for k in ("n_questions", "n_skills", "n_meta_skills")}))
    print(f"wrote {args.out}")
    return 0
