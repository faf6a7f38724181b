#!/usr/bin/env bash
# Regenerates the shape-only models bundled in models/ with `planner model`.
# Usage: tools/make-models.sh PATH/TO/planner
set -euo pipefail
BIN=${1:?usage: tools/make-models.sh PATH/TO/planner}
cd "$(dirname "$0")/.."
# GPT-2 small (124M): 12 layers, hidden 768, 12 heads, seq 1024, vocab 50257.
"$BIN" model gpt --layers 12 --hidden 768 --heads 12 --seq 1024 --vocab 50257 --batch 8 \
  -o models/gpt2-small.onnx --force
# A small MLP for executor tests.
"$BIN" model mlp --layers 4 --width 1024 --batch 64 -o models/mlp-4x1024.onnx --force
