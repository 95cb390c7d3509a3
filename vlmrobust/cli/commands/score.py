"""`vlmrobust score --dataset DIR [--config C] --predictions FILE --out FILE`."""

from __future__ import annotations

import argparse
from pathlib import Path

from vlmrobust.cli.common import add_dataset_predictions_args


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


def run(args: argparse.Namespace) -> int:
    from vlmrobust.core.kinds import MCQ
    from vlmrobust.evaluation.scoring.dataset import score
    from vlmrobust.evaluation.scoring.guidance import DEFAULT_CFG_GRID
    from vlmrobust.evaluation.scoring.registration import scorer_for
    from vlmrobust.evaluation.scoring.rows.results import rows_path

    scores = score(args.dataset, args.predictions, args.out, args.config, args.model_id, args.seed,
                   imagenet_x=args.imagenet_x, ood_score=args.ood_score,
                   cfg_grid=args.cfg_grid or DEFAULT_CFG_GRID)
    for name, section in scores["datasets"].items():  # absent kind: mcq (older scores)
        for line in scorer_for(section.get("kind") or MCQ).summary(name, section):
            print(line)
    print(f"wrote {args.out} and {rows_path(args.out)}")
    return 0
