#!/usr/bin/env bash
# Set everything up (incl. headless chromium for the leaderboard test), then run
# the unit + integration tests (tests/perf/ benchmarks run with `tox -e perf`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --browser
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
