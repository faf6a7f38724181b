#!/usr/bin/env bash
# Regenerates the plan fixtures of the executor tests (tests/executor/data/)
# from a tiny GPT: 4 layers, hidden 64, 4 heads, sequence 32, vocabulary 128,
# batch 2. Usage: gen_plans.sh PLANNER_BIN
# The model itself is not checked in: the tests write it again with the same
# `planner model` command (modelgen is deterministic, so model.sha256 matches).
set -euo pipefail
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
"$bin" model gpt --layers 4 --hidden 64 --heads 4 --seq 32 --vocab 128 --batch 2 -o tiny.onnx >/dev/null
cp "$here/data/megatron.hints" .
est() { "$bin" estimate tiny.onnx --profile a100-sxm4-80gb --micro-batch 2 "$@" >/dev/null; }
est --devices 2 --tp 2 --global-batch 4 --hints megatron.hints -o gpt_tp2.json
est --devices 2 --pp 2 --global-batch 4 -o gpt_pp2.json
est --devices 2 --global-batch 4 -o gpt_dp2.json
est --devices 2 --global-batch 4 --zero 1 -o gpt_dp2_zero1.json
est --devices 4 --tp 2 --pp 2 --global-batch 4 --hints megatron.hints -o gpt_tp2_pp2.json
est --devices 4 --pp 2 --global-batch 8 --dp 2 --schedule interleaved --vp 2 -o gpt_dp2_pp2_vp2.json
cp gpt_*.json "$here/data/"
