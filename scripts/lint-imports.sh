#!/usr/bin/env bash
# Check the import-linter layer contract (pyproject [tool.importlinter]) against a
# non-editable install of the checkout: import-linter walks vlmrobust.__path__, which
# an editable install with package-dir mappings does not fill.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
PY="${PYTHON:-$repo/.venv/bin/python}"
target="$(mktemp -d)"
trap 'rm -rf "$target" "$target.log"' EXIT
if ! "$PY" -m pip install -q --no-deps --no-build-isolation --no-compile --target "$target" . >"$target.log" 2>&1; then
  tail -20 "$target.log" >&2
  exit 1
fi
# Run from the target so the checkout's own vlmrobust/ does not shadow the install.
cd "$target"
PYTHONPATH="$target" "$PY" -c 'import sys
from importlinter.cli import lint_imports_command
sys.argv[0] = "lint-imports"
sys.exit(lint_imports_command())' --config "$repo/pyproject.toml" --no-cache
