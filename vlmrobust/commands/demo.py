"""`vlmrobust demo --out DIR`: the whole pipeline on the embedded sample."""

from __future__ import annotations

import argparse
from pathlib import Path

from vlmrobust.errors import VlmrobustError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the whole pipeline on the embedded sample")
    p.add_argument("--out", type=Path, required=True, help="output folder")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    raise VlmrobustError("'vlmrobust demo' is not built yet")
