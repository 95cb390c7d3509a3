#!/usr/bin/env bash
# Set everything up, then run ruff, the import-linter layer contract, mypy and the
# unit + integration tests on two pytest-xdist workers (this machine's 2 cores),
# printing the 15 slowest at the end. Tests marked `slow` run with
# `bash scripts/run-slow-tests.sh` (`tox -e slow`), which CI runs too; tests/perf/
# benchmarks run with `tox -e perf`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1
echo "[tests] ruff"
.venv/bin/ruff check vlmrobust builders evaluation leaderboard benchmarks tests scripts
echo "[tests] import layers (import-linter, non-editable install)"
if ! layers="$(bash scripts/lint-imports.sh 2>&1)"; then echo "$layers"; exit 1; fi
echo "$layers" | tail -1
echo "[tests] mypy"
.venv/bin/mypy
echo "[tests] pytest"
# --dist loadgroup: tests marked xdist_group("name") share one worker (the
# session's wheel and its venvs are built once); the rest go wherever a worker
# is free. Each worker keeps its own temporary folders and HF cache
# (tests/conftest.py) and uses its share of the CPUs' threads.
exec .venv/bin/python -m pytest -q -p no:cacheprovider -m "not slow" -n 2 --dist loadgroup \
  --durations=15 "$@"
