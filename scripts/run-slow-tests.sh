#!/usr/bin/env bash
# The tests marked `slow` (pyproject [tool.pytest.ini_options] markers), which the
# README's test command (scripts/run-tests.sh) leaves out to stay under 8 minutes:
# the real lmms-eval run from its cached environment, the leaderboard in headless
# Chromium, and the longest model and build checks. CI (.ci/run) runs them after
# the test command, through `tox -e slow`; in the project's .venv, since a tox env
# of its own would install torch and the [all] extras a second time.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --browser
# lmms-eval's own environment (tests/evaluation/harness/lmms_eval/test_run.py): built
# once into ~/.cache/vlmrobust/lmms-eval-env (about 7 GB; 2 to 10 minutes, mostly
# downloads) and reused after; the test waits for the build when it is running.
lmms_log="${TMPDIR:-/tmp}/vlmrobust-lmms-eval-env.log"
bash scripts/lmms-eval-env.sh >"$lmms_log" 2>&1 &
export VLMROBUST_LMMS_EVAL=1
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1
echo "[slow tests] pytest -m slow"
exec .venv/bin/python -m pytest -q -p no:cacheprovider -m slow -n 2 --dist loadgroup \
  --durations=15 "$@"
