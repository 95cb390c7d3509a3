"""`vlmrobust score --dataset DIR [--config C] --predictions FILE --out FILE`."""

from __future__ import annotations

import argparse
from pathlib import Path

from vlmrobust.cli.commands.common import add_dataset_predictions_args


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "score",
        help="validate predictions and write scores.json",
        description="Validate a predictions file against its dataset, then write scores.json "
        "(accuracy + CI, ECE/NLL before/after temperature scaling, Bench-C RAS, the predictions' "
        "sha256) and, beside it, the per-row results (<out stem>.rows.jsonl). Rows with text are "
        "answered by the project's matcher; text that answers no option counts as wrong and is "
        "reported as no answer. Nothing is written if validation fails; --out may not be an input.",
    )
    add_dataset_predictions_args(p, "score one config only (default: all)")
    p.add_argument("--out", type=Path, required=True, help="scores.json to write")
    p.add_argument("--model-id", default=None, help="model id recorded in scores.json "
                   "(default: the model named in the predictions' metadata)")
    p.add_argument("--seed", type=int, default=0, help="seed of bootstrap CIs and calibration splits")
    p.add_argument("--imagenet-x", type=Path, default=None,
                   help="ImageNet-X val annotations (default: the installed imagenet-x "
                   "package's imagenet_x_val_top_factor.jsonl, prototypes removed: seed 001's) "
                   "for per-factor accuracy on imagenet-val configs; a prototypical_paths.csv "
                   "beside the file is applied")
    p.add_argument("--ood-score", choices=("msp", "mcm", "max_logit", "energy"), default=None,
                   help="headline OOD score of an ood dataset (default: mcm for zero-shot CLIP, "
                   "msp otherwise, as submit and the leaderboard score; mcm is refused for a "
                   "model that is not clip)")
    p.add_argument("--cfg-grid", type=_cfg_grid, default=None, metavar="T,T,...",
                   help="guidance weights a CFG run (--mode likelihood:cfg=T / cfg-avg=T) is "
                   "also scored at, from its stored log-probs (default 0,0.5,1,1.5,2,3,5; the "
                   "run's own T, the headline, is always added)")
    p.set_defaults(func=run)


def _cfg_grid(text: str) -> tuple[float, ...]:
    from vlmrobust.core.errors import VlmrobustError
    from vlmrobust.evaluation.scoring.guidance import parse_grid

    try:
        return parse_grid(text)
    except VlmrobustError as exc:  # argparse prints it as a one-line usage error
        raise argparse.ArgumentTypeError(str(exc)) from None


def _fmt(x: object) -> str:
    return f"{x:.3f}" if isinstance(x, (int, float)) else "n/a"


def run(args: argparse.Namespace) -> int:
    from vlmrobust.evaluation.scoring.dataset import score
    from vlmrobust.evaluation.scoring.guidance import DEFAULT_CFG_GRID
    from vlmrobust.evaluation.scoring.row_results import rows_path
    from vlmrobust.evaluation.validate.check import partial_note

    scores = score(args.dataset, args.predictions, args.out, args.config, args.model_id, args.seed,
                   imagenet_x=args.imagenet_x, ood_score=args.ood_score,
                   cfg_grid=args.cfg_grid or DEFAULT_CFG_GRID)
    for name, section in scores["datasets"].items():
        if section.get("kind") == "retrieval":  # Recall@K, no accuracy
            print(f"{name}: " + ", ".join(
                f"{c} R@5 image→text {v['image_to_text']['recall@5']:.3f} text→image "
                f"{v['text_to_image']['recall@5']:.3f}" for c, v in section["configs"].items())
                + (f"; {partial_note(section['partial'])}" if section.get("partial") else ""))
            continue
        # an OOD config has no accuracy (its rows have no label): "n/a" there
        accs = ", ".join(f"{c} {_fmt(v.get('accuracy'))}" for c, v in section["configs"].items())
        line = f"{name}: accuracy {accs}"
        ood = section.get("ood")
        if ood and ood.get("sets"):
            line += f"; OOD ({ood['score']}) AUROC " + ", ".join(
                f"{s} {_fmt(v.get('auroc'))}" for s, v in ood["sets"].items())
        bench_c = section.get("bench_c")
        if bench_c and bench_c["aggregate"]["ras"] is not None:
            line += f"; RAS {bench_c['aggregate']['ras']:.4f}"
        cfg = section.get("cfg")
        if cfg:
            line += f"; CFG t={cfg['headline_t']:g} (headline), " + ", ".join(
                f"{c} " + " ".join(f"t={r['t']:g}:{_fmt(r['accuracy'])}" for r in v["accuracy_by_t"])
                for c, v in cfg["configs"].items())
        if section.get("no_answer"):
            line += f"; no answer in {section['no_answer']} rows (counted as wrong)"
        print(line)
        if section.get("partial"):
            print(f"{name}: {partial_note(section['partial'])}")
    print(f"wrote {args.out} and {rows_path(args.out)}")
    return 0
