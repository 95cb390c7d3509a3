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
# before pytest: the non-editable install writes build/ and vlmrobust.egg-info
# into the checkout, which tests must not see half-written
echo "[tests] import layers (import-linter, non-editable install)"
if ! layers="$(bash scripts/lint-imports.sh 2>&1)"; then echo "$layers"; exit 1; fi
echo "$layers" | tail -1

# mypy runs beside pytest (one process on one core: ~50 s of CPU that left a
# core idle before pytest started), into a log printed after pytest's output;
# its failure fails the command as pytest's does.
mypy_log="$(mktemp)"
trap 'rm -f "$mypy_log"' EXIT
echo "[tests] mypy: beside pytest, reported after it"
.venv/bin/mypy >"$mypy_log" 2>&1 &
mypy_pid=$!

echo "[tests] pytest"
# --dist loadgroup: tests marked xdist_group("name") share one worker (the
# session's wheel and its venvs are built once); the rest go wherever a worker
# is free, the longest first (tests/fixtures/workers.py FIRST, kept in that order
# by --no-loadscope-reorder). Each worker keeps its own temporary folders and HF
# cache (tests/conftest.py) and uses its share of the CPUs' threads.
rc=0
.venv/bin/python -m pytest -q -p no:cacheprovider -m "not slow" -n 2 --dist loadgroup \
  --no-loadscope-reorder --durations=15 "$@" || rc=$?

mypy_rc=0
wait "$mypy_pid" || mypy_rc=$?
echo "[tests] mypy"
cat "$mypy_log"
if [ "$mypy_rc" != 0 ]; then echo "[tests] mypy failed (exit $mypy_rc)"; fi
if [ "$rc" = 0 ]; then rc="$mypy_rc"; fi
exit "$rc"
