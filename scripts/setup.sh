#!/usr/bin/env bash
# Idempotent setup for a fresh Debian machine (this project's CI kind): a venv in
# .venv with torch 2.14.1 / torchvision 0.29.1 (pip takes them from local disk here),
# the project + dev extras, Debian's WordNet 3.0 (+ the nltk layout it needs) and,
# with --browser, Debian's chromium + chromedriver for the leaderboard browser test.
set -euo pipefail
cd "$(dirname "$0")/.."

want_browser=0
for arg in "$@"; do
  case "$arg" in
    --browser) want_browser=1 ;;
    *) echo "setup.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done

log() { printf '[setup] %s\n' "$*"; }
# pip is chatty (and this machine's index config adds a warning per package): keep
# its output in a log and show the tail only when it fails. --no-compile: pip's
# byte-compiling of all 23,000 .py files of the venv was 41 s of setup's CPU;
# Python compiles (and caches) the ~4,700 that the tests import, ~9 s, on first import.
pip_quiet() {
  local logf=".venv/setup-pip.log"
  if ! .venv/bin/python -m pip install -q --no-compile "$@" >"$logf" 2>&1; then
    tail -40 "$logf" >&2
    echo "[setup] pip install $* failed; full log: $logf" >&2
    exit 1
  fi
}

apt_pkgs=(wordnet-base wordnet-sense-index)
if [ "$want_browser" = 1 ]; then apt_pkgs+=(chromium chromium-driver); fi
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  log "apt-get install ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  log "creating .venv"
  "$PY" -m venv .venv
  pip_quiet --upgrade pip
fi
if ! .venv/bin/python -c "import torch, torchvision; assert torch.__version__.startswith('2.14.1')" 2>/dev/null; then
  log "installing torch 2.14.1 + torchvision 0.29.1 (large; from the local wheel store when present)"
  pip_quiet torch==2.14.1 torchvision==0.29.1
fi
if ! .venv/bin/python -c "import setuptools, sys; sys.exit(int(setuptools.__version__.split('.')[0]) < 68)" 2>/dev/null; then
  pip_quiet "setuptools>=68" wheel
fi
log "installing vlmrobust (editable) with the all + dev extras"
pip_quiet -e '.[all,dev]'
log "WordNet 3.0 for nltk"
.venv/bin/python -m vlmrobust.builders.wordnet --install
log "ready: $(.venv/bin/vlmrobust --version)"
