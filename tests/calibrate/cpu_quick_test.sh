#!/usr/bin/env bash
# ctest calibrate_cpu_quick: a real quick calibration on 2 MPI ranks
# (OpenBLAS sgemm, triad, the five collectives through the MPI communicator),
# then `planner estimate` with the profile it wrote, on a tiny MLP.
# Usage: cpu_quick_test.sh PLANNER_BIN MPIEXEC
set -u
BIN=$(realpath "$1")
MPIRUN=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail() { echo "calibrate_cpu_quick: FAIL: $*"; exit 1; }

"$MPIRUN" --oversubscribe --mca btl self,vader -n 2 "$BIN" calibrate --backend cpu --quick -o cpu2.json \
  >out.txt 2>err.txt
rc=$?
[ "$rc" = 0 ] || { cat out.txt err.txt; fail "calibrate exited $rc"; }
cat out.txt
[ -s cpu2.json ] || fail "no profile written"
grep -q '^wrote cpu2.json (profile .cpu2., 2 rank(s)' out.txt || fail "summary line missing"
# Only rank 0 prints: one summary line.
[ "$(grep -c '^wrote' out.txt)" = 1 ] || fail "more than one summary line"
for c in all_reduce all_gather reduce_scatter all_to_all broadcast; do
  grep -q "$c on shm (2 ranks)" out.txt || fail "no $c in the summary"
done
grep -q '"source": "measured by planner calibrate --backend cpu' cpu2.json || fail "no measured source"
grep -q '"mpi_library"' cpu2.json || fail "no MPI library in provenance"
grep -q '"openblas_config"' cpu2.json || fail "no OpenBLAS config in provenance"
# The backend's own kernels: a special-function rate and an Adam update
# rate, positive and sourced (a CPU's libm runs ~1e7-1e9 evaluations/s per
# core, its Adam ~1e7-1e10 parameters/s).
python3 - <<'PY' || fail "special-function or Adam rate missing or out of range"
import json
d = json.load(open("cpu2.json"))["device"]
for key, lo, hi in [("special_function_rate_per_s", 1e6, 1e10), ("erf_rate_per_s", 1e6, 1e10), ("adam_update_rate_params_per_s", 1e6, 1e11)]:
    v = d[key]
    assert lo < v["value"] < hi, (key, v)
    assert "runtime_cpu::" in v["source"], (key, v)
# The ranks' pace: written when the rounds spread (nearly always on a
# shared host), in the profile's domain (0, 1], with its rounds named.
if "step_time_cv" in d:
    v = d["step_time_cv"]
    assert 0 < v["value"] <= 1 and "6 rounds of the same sgemm work" in v["source"], v
PY

"$BIN" model mlp --layers 2 --width 256 --batch 32 -o tiny.onnx >/dev/null || fail "planner model"
"$BIN" estimate tiny.onnx --profile ./cpu2.json --devices 2 --precision fp32 --attention unfused \
  --micro-batch 32 --global-batch 64 >est.txt 2>&1
rc=$?
[ "$rc" = 0 ] || { cat est.txt; fail "estimate exited $rc"; }
cat est.txt
grep -q '^step time' est.txt || fail "no step time"
grep -q '^cluster      2 x ' est.txt || fail "cluster line missing"
# The defaults follow the profile: a gpt (attention) estimated with no
# --precision or --attention runs fp32 and unfused attention on the CPU
# profile (no 16-bit GEMM peak, no fused-attention kernel) and says why; the
# plan records them, and `planner run` can execute it.
"$BIN" model gpt --layers 2 --hidden 64 --heads 4 --seq 32 --vocab 256 --batch 2 -o gpt.onnx >/dev/null || fail "model gpt"
"$BIN" estimate gpt.onnx --profile ./cpu2.json --devices 2 --micro-batch 2 --global-batch 4 -o gpt.plan.json \
  >gest.txt 2>&1
rc=$?
[ "$rc" = 0 ] || { cat gest.txt; fail "estimate without --attention exited $rc"; }
grep -q '^training     fp32, attention unfused, ' gest.txt || { cat gest.txt; fail "defaults not fp32 / unfused"; }
grep -q "^defaults     precision fp32: the profile's device '.*' has no bf16 or fp16 GEMM peak; attention unfused: the profile's device '.*' has no fused-attention kernel$" gest.txt ||
  { cat gest.txt; fail "no defaults line"; }
grep -q '"attention": "unfused"' gpt.plan.json || fail "plan does not record unfused attention"
grep -q '"precision": "fp32"' gpt.plan.json || fail "plan does not record fp32"
"$BIN" estimate gpt.onnx --profile ./cpu2.json --devices 2 --micro-batch 2 --global-batch 4 --json >gest.json 2>&1 ||
  fail "estimate --json"
python3 -c 'import json,sys; t=json.load(open("gest.json"))["training"]; assert t["precision"]=="fp32" and t["attention"]=="unfused" and "fused-attention" in t["defaults_note"], t' ||
  fail "--json training defaults"
# An explicit flag is kept, and refused when the profile cannot run it.
"$BIN" estimate gpt.onnx --profile ./cpu2.json --devices 2 --micro-batch 2 --global-batch 4 --attention flash \
  >flash.txt 2>&1 && fail "flash accepted on a CPU profile"
grep -q "has no fused attention kernel" flash.txt || { cat flash.txt; fail "flash refusal"; }

# An existing file is refused without --force: exit 2, one line.
"$MPIRUN" --oversubscribe --mca btl self,vader -n 2 "$BIN" calibrate --backend cpu --quick -o cpu2.json \
  >/dev/null 2>again.txt
rc=$?
[ "$rc" != 0 ] || fail "overwrote without --force"
grep -c 'planner calibrate: error: ' again.txt | grep -qx 1 || { cat again.txt; fail "expected one error line"; }
echo "calibrate_cpu_quick: ok"
