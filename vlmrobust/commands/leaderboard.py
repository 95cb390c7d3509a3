"""`vlmrobust leaderboard` (placeholder until its issue lands)."""

from __future__ import annotations

import argparse

from vlmrobust.errors import VlmrobustError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("leaderboard", help="(not built yet)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    raise VlmrobustError("'vlmrobust leaderboard' is not built yet")
