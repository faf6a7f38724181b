#!/usr/bin/env bash
# ctest gpu_cli (cuda preset, registered only where a GPU was found): the
# CUDA backends end to end on one GPU: planner calibrate --backend cuda
# --quick, an estimate with that profile, planner run --replay --backend cuda
# on a small GPT in bf16, planner compare, and the real mode (--backend cuda
# --check against the CPU interpreter) in bf16 and fp32 storage.
# Usage: gpu_cli_test.sh PLANNER_BIN
set -u
BIN=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail() { echo "gpu_cli: FAIL: $*"; exit 1; }

"$BIN" calibrate --backend cuda --quick -o gpu1.json >cal.txt 2>&1 || { cat cal.txt; fail "calibrate"; }
cat cal.txt
grep -q "^wrote gpu1.json (profile 'gpu1', 1 rank(s) on " cal.txt || fail "calibrate summary line"
grep -q '"tool": "planner calibrate --backend cuda"' gpu1.json || fail "no provenance tool"
for k in cuda_driver cuda_runtime cublas nccl device; do
  grep -q "\"$k\": " gpu1.json || fail "no $k in provenance"
done

"$BIN" model gpt --layers 2 --hidden 256 --heads 4 --seq 128 --vocab 1024 --batch 4 -o g.onnx >/dev/null || fail "model"
"$BIN" estimate g.onnx --profile ./gpu1.json --devices 1 --micro-batch 4 --global-batch 4 --precision bf16 \
  --attention unfused -o plan.json >est.txt 2>&1 || { cat est.txt; fail "estimate"; }
"$BIN" run plan.json --replay --backend cuda --steps 3 --warmup 1 -o m.json >run.txt 2>&1 || { cat run.txt; fail "run"; }
cat run.txt
grep -q "^backend cuda: .* per rank, bf16 GEMMs (cuBLAS " run.txt || fail "no backend line"
grep -q "^peak device memory per rank: " run.txt || fail "no device memory line"
grep -q '"backend": "cuda"' m.json || fail "measured.json does not say cuda"
"$BIN" compare plan.json m.json >cmp.txt 2>&1 || { cat cmp.txt; fail "compare"; }
cat cmp.txt
grep -q "(measured, mode replay, backend cuda, 1 ranks on " cmp.txt || fail "compare header"
grep -q "^step_time " cmp.txt || fail "no step_time row"
# The real mode on one GPU against the CPU interpreter, bf16 and fp32 storage.
"$BIN" run plan.json --backend cuda --check --steps 2 --warmup 1 >real.txt 2>&1 || { cat real.txt; fail "real bf16 --check"; }
cat real.txt
grep -q "^planner run: mode real, backend cuda, plan.json (1 rank on .*, bf16 storage, adam)" real.txt || fail "real header"
grep -q "^check step 3: .* <= 5e-02: ok" real.txt || fail "no bf16 check line for step 3"
sed 's/"precision": "bf16"/"precision": "fp32"/' plan.json >plan32.json
"$BIN" run plan32.json --backend cuda --check --steps 2 --warmup 1 >real32.txt 2>&1 || { cat real32.txt; fail "real fp32 --check"; }
cat real32.txt
grep -q "^check step 3: .* <= 1e-05: ok" real32.txt || fail "no fp32 check line for step 3"
# fp8 plans are refused with one line.
"$BIN" estimate g.onnx --profile ./gpu1.json --devices 1 --micro-batch 4 --global-batch 4 --precision bf16 \
  --attention unfused -o plan8.json >/dev/null 2>&1 || fail "estimate 2"
sed -i 's/"precision": "bf16"/"precision": "fp8"/' plan8.json
"$BIN" run plan8.json --replay --backend cuda --steps 1 >fp8.txt 2>&1
rc=$?
[ "$rc" = 2 ] && [ "$(cat fp8.txt)" = "planner run: error: plan8.json: training.precision: precision 'fp8': the device backend has no fp8 GEMM (use bf16 or fp16)" ] ||
  { cat fp8.txt; fail "fp8 not refused with exit 2 and one line (rc $rc)"; }
echo "gpu_cli: ok"
