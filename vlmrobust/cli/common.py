"""Arguments shared by the commands that read a dataset and a predictions file."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_dataset_predictions_args(p: argparse.ArgumentParser, config_help: str | None) -> None:
    """``--dataset DIR [--config C] --predictions FILE``; no ``--config`` when
    ``config_help`` is None."""
    p.add_argument("--dataset", type=Path, required=True, help="dataset directory")
    if config_help is not None:
        p.add_argument("--config", default=None, help=config_help)
    p.add_argument("--predictions", type=Path, required=True, help="predictions file")
