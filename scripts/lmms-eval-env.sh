#!/usr/bin/env bash
# Build, once, the separate Python environment in which tests/evaluation/harness/lmms_eval/test_run.py
# runs the real lmms-eval (it pins its own dependencies; it never enters .venv) and
# print its folder. Idempotent and safe to run twice at once:
#   - the folder is keyed by a hash of the pins, LAYOUT and the Python version,
#     under ${VLMROBUST_CACHE:-~/.cache/vlmrobust}/lmms-eval-env/<key>, outside the repo,
#     so every clone on the machine reuses it;
#   - it is built in a temporary folder beside it and renamed into place only once
#     lmms-eval imports, so a killed build never leaves a half environment behind
#     (a renamed venv runs as `<env>/bin/python -m lmms_eval`; its console scripts'
#     shebangs name the temporary folder and are not used);
#   - a lock file serialises concurrent builds (the test waits on it).
# torch 2.14.1 / torchvision 0.29.1 come from this machine's local wheel store
# (pip's constraint file caps them there); lmms-eval and the rest come from PyPI.
# Measured on the 2-core CI machine: see the README ("Already using lmms-eval").
#   bash scripts/lmms-eval-env.sh            # build if needed, print the folder
#   bash scripts/lmms-eval-env.sh --key      # print the folder it would use, build nothing
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${PYTHON:-python3}"
# lmms-eval 0.7.3 runs on transformers 4.x: under 5.x its llava_hf.loglikelihood
# tokenises the context through the processor without the image, which transformers 5
# refuses ("Found 1 <image> tokens in the text but no images were passed").
# datasets / sentence-transformers: the last releases that accept transformers 4 and
# huggingface-hub < 1. decord: lmms-eval's llava_hf module imports it at the top (for
# video) but lmms-eval does not depend on it. filelock<4: lmms-eval 0.7.3's evaluator
# patches filelock._api, which filelock 4 removed.
PINS=("lmms-eval==0.7.3" "torch==2.14.1" "torchvision==0.29.1" "transformers==4.57.6"
      "datasets==4.8.5" "sentence-transformers==5.7.0" "decord==0.6.0" "filelock==3.32.7")

root="${VLMROBUST_CACHE:-$HOME/.cache/vlmrobust}/lmms-eval-env"
# bump LAYOUT when the way the environment is built changes (a new key rebuilds it)
LAYOUT=1
key="$( { printf '%s\n' "${PINS[@]}" "layout $LAYOUT"; "$PY" -c 'import sys; print(sys.version)'; } \
        | sha256sum | cut -c1-16)"
dest="$root/$key"
if [ "${1:-}" = "--key" ]; then echo "$dest"; exit 0; fi
if [ -f "$dest/.ready" ]; then echo "$dest"; exit 0; fi

mkdir -p "$root"
exec 9>"$root/.lock"
flock 9
if [ -f "$dest/.ready" ]; then echo "$dest"; exit 0; fi   # built while we waited
# holding the lock, no build is running: a .build-* folder is what a killed one left
rm -rf "$root"/.build-*

tmp="$(mktemp -d "$root/.build-$key.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
echo "[lmms-eval-env] building $dest (${PINS[*]}); log: $root/build-$key.log" >&2
{
  "$PY" -m venv "$tmp"
  nice -n 10 "$tmp/bin/python" -m pip install -q --upgrade pip
  nice -n 10 "$tmp/bin/python" -m pip install -q "${PINS[@]}"
  # the smoke test: lmms-eval imports, with its task registry, without the network
  HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 "$tmp/bin/python" -c \
    "import lmms_eval, lmms_eval.evaluator, lmms_eval.tasks, lmms_eval.models.chat.llava_hf, filelock._api; from importlib.metadata import version; print('lmms-eval', version('lmms_eval'))"
} >"$root/build-$key.log" 2>&1 || {
  tail -30 "$root/build-$key.log" >&2
  echo "[lmms-eval-env] build failed; full log: $root/build-$key.log" >&2
  exit 1
}
echo "built $(date -u +%FT%TZ) in $(( $(date +%s) - start )) s: ${PINS[*]}" >"$tmp/.ready"
mv -T "$tmp" "$dest"
trap - EXIT
echo "[lmms-eval-env] built in $(( $(date +%s) - start )) s" >&2
echo "$dest"
