#!/usr/bin/env bash
# Set everything up (incl. headless chromium for the leaderboard test), then run
# ruff, mypy, the import-linter layer contract and the unit + integration tests
# (tests/perf/ benchmarks run with `tox -e perf`).
set -euo pipefail
cd "$(dirname "$0")/.."
# lmms-eval's own environment (tests/evaluation/harness/test_lmms_eval_run.py): built once into
# ~/.cache/vlmrobust/lmms-eval-env (about 7 GB; 2 to 10 minutes, mostly downloads), in
# the background while setup and the suite run; the test waits for it. Reused after.
lmms_log="${TMPDIR:-/tmp}/vlmrobust-lmms-eval-env.log"
bash scripts/lmms-eval-env.sh >"$lmms_log" 2>&1 &
export VLMROBUST_LMMS_EVAL=1
bash scripts/setup.sh --browser
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1
echo "[tests] ruff"
.venv/bin/ruff check vlmrobust builders evaluation leaderboard benchmarks tests scripts
echo "[tests] import layers (import-linter, non-editable install)"
if ! layers="$(bash scripts/lint-imports.sh 2>&1)"; then echo "$layers"; exit 1; fi
echo "$layers" | tail -1
echo "[tests] mypy"
.venv/bin/mypy
echo "[tests] pytest"
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
