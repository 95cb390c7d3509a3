#!/usr/bin/env bash
# Set everything up, then run the whole pipeline on the embedded sample.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
out="${1:-demo-out}"
exec .venv/bin/vlmrobust demo --out "$out"
