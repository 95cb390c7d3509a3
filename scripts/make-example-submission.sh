#!/usr/bin/env bash
# Regenerate submissions/efficientnet-lite0 and the dataset build it answers,
# submissions/datasets/imagenet-mcq (shipped, so that `vlmrobust leaderboard build
# --submissions submissions` works on a fresh clone without the build extra).
# Needs the predict and build extras.
set -euo pipefail
cd "$(dirname "$0")/.."
VLM="${VLMROBUST:-.venv/bin/vlmrobust}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$VLM" build imagenet-mcq --sample --limit 1 --out "$tmp/imagenet-mcq" --no-progress
"$VLM" predict --model classifier:efficientnet-lite0 --dataset "$tmp/imagenet-mcq" \
    --out "$tmp/preds/predictions.parquet" --device cpu --no-progress
rm -rf submissions/datasets/imagenet-mcq submissions/efficientnet-lite0
mkdir -p submissions/datasets
cp -r "$tmp/imagenet-mcq" submissions/datasets/imagenet-mcq
"$VLM" submit --submissions submissions --model-id efficientnet-lite0 \
    --dataset submissions/datasets/imagenet-mcq --predictions "$tmp/preds/predictions.parquet" \
    --name EfficientNet-Lite0
"$VLM" leaderboard build --submissions submissions --out "$tmp/site" --quiet
