"""`vlmrobust` console script: argparse subcommands, one module each under
vlmrobust/cli/commands/. Every command exits 0 on success and 1 with a one-line
``error: ...`` on a user-facing failure."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from vlmrobust import __version__
from vlmrobust.core.errors import VlmrobustError, printable
from vlmrobust.core.extras import missing_extra_message

# Order is the order shown in --help.
COMMAND_MODULES = ("eval", "build", "convert", "predict", "validate", "score", "submit", "leaderboard",
                   "compare", "demo", "models", "prompts", "export", "import_", "discover")  # import_: "import" is a keyword


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vlmrobust",
        description="Build robustness benchmarks, evaluate models, score submissions, "
        "render the leaderboard.",
    )
    parser.add_argument("--version", action="version", version=f"vlmrobust {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"vlmrobust.cli.commands.{name}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # OpenMP threads that spin while waiting made EfficientNet-Lite ~4x slower on
    # a loaded 2-core machine (1.4 vs 6 img/s); passive waiting costs nothing when
    # the machine is idle. Must be set before torch starts its thread pool.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    parser = make_parser()
    args = parser.parse_args(argv)
    # a swap that a killed command left half done (a folder moved aside, not yet
    # replaced) is put right before anything else reads or writes
    from vlmrobust.core.files.swap import recover_pending

    recover_pending()
    try:
        rc = args.func(args)
    except VlmrobustError as exc:
        print(f"error: {printable(exc)}", file=sys.stderr)
        return 1
    except ModuleNotFoundError as exc:
        message = missing_extra_message(exc, f"`vlmrobust {args.command}`")
        if message is None:
            raise
        print(f"error: {printable(message)}", file=sys.stderr)
        return 1
    except OSError as exc:
        # disk full, a read-only folder, a vanished file: the environment, not a bug
        where = f"{exc.filename}: " if exc.filename else ""
        print(printable(f"error: {where}{exc.strerror or exc}; check free space and permissions"),
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted; run the same command again to resume", file=sys.stderr)
        return 130
    return int(rc or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
