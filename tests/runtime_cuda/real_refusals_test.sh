#!/usr/bin/env bash
# ctest cuda_real_refusals (cuda preset, no GPU needed): what the GPU real
# mode (planner run --backend cuda without --replay) refuses before it
# touches a device, each with exit 2 and one line: a plan on 2 ranks, and a
# one-rank plan with 2 micro-batches per step.
# Usage: real_refusals_test.sh PLANNER_BIN MPIEXEC
set -u
BIN=$(realpath "$1")
MPIEXEC=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail() { echo "cuda_real_refusals: FAIL: $*"; exit 1; }

"$BIN" model gpt --layers 2 --hidden 64 --heads 4 --seq 16 --vocab 128 --batch 2 -o g.onnx >/dev/null || fail "model"
"$BIN" estimate g.onnx --profile a100-sxm4-80gb --devices 2 --micro-batch 2 --global-batch 4 --precision fp32 \
  --attention unfused -o dp2.json >/dev/null 2>&1 || fail "estimate dp2"
"$MPIEXEC" -n 2 "$BIN" run dp2.json --backend cuda --check >dp2.txt 2>&1
rc=$?
want="planner run: error: dp2.json: --backend cuda without --replay runs one-rank plans on one GPU only (cluster.devices is 2); --replay --backend cuda times multi-GPU plans"
[ "$rc" != 0 ] && [ "$(grep -c '^planner run: error:' dp2.txt)" = 1 ] && grep -qxF "$want" dp2.txt ||
  { cat dp2.txt; fail "2-rank plan not refused with one line (rc $rc)"; }

"$BIN" estimate g.onnx --profile a100-sxm4-80gb --devices 1 --micro-batch 2 --global-batch 4 --precision fp32 \
  --attention unfused -o mb2.json >/dev/null 2>&1 || fail "estimate mb2"
"$BIN" run mb2.json --backend cuda >mb2.txt 2>&1
rc=$?
[ "$rc" = 2 ] && [ "$(cat mb2.txt)" = "planner run: error: mb2.json: --backend cuda without --replay runs one micro-batch per step (training.micro_batches is 2)" ] ||
  { cat mb2.txt; fail "2 micro-batches not refused with exit 2 and one line (rc $rc)"; }
echo "cuda_real_refusals: ok"
