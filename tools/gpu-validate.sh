#!/usr/bin/env bash
# tools/gpu-validate.sh: checks the CUDA backend on a GPU machine and writes
# the figures for docs/validation-executor.md (docs/executor.md, "Validating
# on a GPU"). Run from the repository root of a fresh checkout:
#
#   OUT=/some/dir tools/gpu-validate.sh        # OUT defaults to ./gpu-validate-out
#
# Steps (each logged to $OUT/<step>.out and .err, progress on stdout and in
# $OUT/gpu-validate.log):
#   1. build deps (tools/bootstrap.sh when cmake or ninja is missing), nvidia-smi
#   2. configure the cuda preset, build planner and runtime_cuda_test
#   3. the [gpu] unit tests (cuBLAS GEMMs, kernels, timer, NCCL) and the
#      gpu_cli ctest (the CLI's CUDA backends end to end, quick)
#   4. planner calibrate --backend cuda -o $OUT/h200.json (full sweep)
#   5. per model: planner model gpt, planner estimate --profile $OUT/h200.json,
#      planner run --replay --backend cuda, planner compare
#   6. $OUT/validation-executor.md: the calibration and predicted vs measured
#      as markdown tables
# Budget: about 8 minutes on a 16-core H200 machine (the build is most of it).
#
# PLANNER_VALIDATE_BACKEND=cpu runs the same steps on the CPU (default preset,
# --backend cpu, quick sweep, smaller models, fp32): a dry run of this script
# on a machine without a GPU; its figures are not GPU figures.
set -uo pipefail

BACKEND=${PLANNER_VALIDATE_BACKEND:-cuda}
OUT=${OUT:-$PWD/gpu-validate-out}
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
ROOT=$(pwd)
[ -f "$ROOT/CMakePresets.json" ] && [ -d "$ROOT/src/runtime_cuda" ] || {
  echo "gpu-validate: run me from the planner repository root" >&2
  exit 2
}
exec > >(tee -a "$OUT/gpu-validate.log") 2>&1
T0=$(date +%s)
step() { echo "[gpu-validate +$(($(date +%s) - T0))s] $*"; }
die() {
  step "FAILED: $*"
  exit 1
}
# run NAME LIMIT_S CMD...: runs CMD with a time limit, output to $OUT/NAME.{out,err}.
run() {
  local name=$1 limit=$2
  shift 2
  step "$name: $*"
  timeout "$limit" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
  local rc=$?
  tail -n 25 "$OUT/$name.out"
  [ "$rc" = 0 ] || { tail -n 25 "$OUT/$name.err"; step "$name exited $rc"; }
  return "$rc"
}

export PATH="$PATH:/usr/local/cuda/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
JOBS=$(nproc 2>/dev/null || echo 4)

# 1. Tools and the GPU.
step "backend $BACKEND, output in $OUT, $JOBS cores"
if ! command -v cmake >/dev/null || ! command -v ninja >/dev/null; then
  run bootstrap 600 tools/bootstrap.sh || step "bootstrap failed (offline?); trying with what is installed"
fi
if [ "$BACKEND" = cuda ]; then
  run nvidia-smi 60 nvidia-smi || die "nvidia-smi: no GPU driver"
  command -v nvcc >/dev/null || die "nvcc not found (CUDA toolkit missing)"
  PRESET=cuda
else
  PRESET=default
fi
LAUNCH=()
if command -v ccache >/dev/null; then
  LAUNCH=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi

# 2. Configure and build.
run configure 300 cmake --preset "$PRESET" "${LAUNCH[@]}" || die "configure"
if [ "$BACKEND" = cuda ]; then
  grep -q "runtime_cuda is not built" "$OUT/configure.err" && die "configure found no CUDA toolkit/NCCL (see configure.err)"
  TARGETS=(planner runtime_cuda_test)
else
  TARGETS=(planner)
fi
run build 420 cmake --build "build/$PRESET" -j"$JOBS" --target "${TARGETS[@]}" || die "build"
BIN=$ROOT/build/$PRESET/planner

# 3. The [gpu] unit tests.
if [ "$BACKEND" = cuda ]; then
  run gpu-tests 120 "build/$PRESET/tests/runtime_cuda_test" "[gpu]" || die "[gpu] tests"
  # The CLI's CUDA backends end to end (quick calibration, replay, compare).
  run gpu-cli 300 ctest --test-dir "build/$PRESET" -R '^gpu_cli$' --output-on-failure ||
    step "gpu_cli ctest failed (see gpu-cli.out); going on"
fi

# 4. Calibration.
PROFILE=$OUT/h200.json
if [ "$BACKEND" = cuda ]; then
  run calibrate 300 "$BIN" calibrate --backend cuda -o "$PROFILE" --force || die "calibrate"
  PRECISIONS=(bf16 bf16 tf32)
else
  PROFILE=$OUT/cpu-dry-run.json
  run calibrate 300 "$BIN" calibrate --backend cpu --quick -o "$PROFILE" --force || die "calibrate"
  PRECISIONS=(fp32 fp32 fp32)
fi

# 5. Predicted against measured, one GPU. name: planner model gpt flags; micro-batch.
if [ "$BACKEND" = cuda ]; then
  MODELS=("gpt2-small-b8|--layers 12 --hidden 768 --heads 12 --seq 1024 --vocab 50304|8"
    "gpt2-medium-b4|--layers 24 --hidden 1024 --heads 16 --seq 1024 --vocab 50304|4"
    "gpt2-small-b8-tf32|--layers 12 --hidden 768 --heads 12 --seq 1024 --vocab 50304|8")
  STEPS=(--steps 10 --warmup 3)
else
  MODELS=("gpt-tiny-b4|--layers 2 --hidden 128 --heads 4 --seq 64 --vocab 512|4"
    "gpt-small-b2|--layers 4 --hidden 256 --heads 4 --seq 128 --vocab 1024|2"
    "gpt-tiny-b4-again|--layers 2 --hidden 128 --heads 4 --seq 64 --vocab 512|4")
  STEPS=(--steps 3 --warmup 1)
fi
RUNS=()
for i in "${!MODELS[@]}"; do
  IFS='|' read -r name flags mb <<<"${MODELS[$i]}"
  prec=${PRECISIONS[$i]}
  # shellcheck disable=SC2086
  run "model-$name" 120 "$BIN" model gpt $flags --batch "$mb" -o "$OUT/$name.onnx" --force || continue
  run "estimate-$name" 120 "$BIN" estimate "$OUT/$name.onnx" --profile "$PROFILE" --devices 1 \
    --micro-batch "$mb" --global-batch "$mb" --precision "$prec" --attention unfused \
    -o "$OUT/plan-$name.json" --force || continue
  run "run-$name" 180 "$BIN" run "$OUT/plan-$name.json" --replay --backend "$BACKEND" "${STEPS[@]}" \
    -o "$OUT/measured-$name.json" --force || continue
  run "compare-$name" 60 "$BIN" compare "$OUT/plan-$name.json" "$OUT/measured-$name.json" || continue
  "$BIN" compare --json "$OUT/plan-$name.json" "$OUT/measured-$name.json" >"$OUT/compare-$name.json" 2>/dev/null
  rm -f "$OUT/$name.onnx"  # shapes only, rebuilt by the same command; keeps $OUT small
  RUNS+=("$name|$prec|$mb|$flags")
done
[ "${#RUNS[@]}" -gt 0 ] || die "no model ran end to end"

# 6. Markdown for docs/validation-executor.md.
step "writing $OUT/validation-executor.md"
if command -v python3 >/dev/null; then
  python3 - "$OUT" "$PROFILE" "$BACKEND" "${RUNS[@]}" >"$OUT/validation-executor.md" <<'PY'
import json, os, sys
out, profile, backend, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
p = json.load(open(profile))
prov, dev = p.get("provenance", {}), p["device"]
print(f"## {dev['name']}: calibration and one-GPU replay ({backend})\n")
print(f"Measured {prov.get('date', '?')} on {prov.get('host', '?')} by `tools/gpu-validate.sh`.\n")
keys = ["device", "cuda_driver", "cuda_runtime", "cublas", "nccl", "mpi_library", "cpu_model", "openblas_config"]
print("| fact | value |\n|---|---|")
for k in keys:
    if k in prov:
        print(f"| {k} | {prov[k]} |")
print("\n### Calibrated profile (`planner calibrate --backend " + backend + "`)\n")
print("| quantity | measured |\n|---|---|")
for prec, v in dev["peak_tflops"].items():
    if v:
        print(f"| {prec} GEMM peak | {v['value']:.4g} TFLOP/s |")
print(f"| memory bandwidth (hbm_GBps) | {dev['hbm_GBps']['value']:.4g} GB/s |")
print(f"| launch + synchronize | {dev['launch_overhead_us']['value']:.3g} us |")
print(f"| memory visible / context | {dev['visible_GiB']['value']:.4g} GiB / {dev['cuda_context_GiB']['value']:.3g} GiB |")
for prec, v in (dev.get("gemm_precision_factor") or {}).items():
    if v:
        print(f"| {prec} factor on the bf16 GEMM table | {v['value']:.3g} |")
summary = os.path.join(out, "calibrate.out")
if os.path.exists(summary):
    lines = [l.rstrip() for l in open(summary) if l.startswith("wrote ") or l.startswith("  ")]
    print("\nHow well the written profile reproduces each measurement (calibrate's summary):\n\n```")
    print("\n".join(lines))
    print("```")
print("\n### Predicted (`planner estimate`) against measured (`planner run --replay --backend " + backend + "`)\n")
print("| model | precision | quantity | predicted | measured | error |\n|---|---|---|---|---|---|")
def fmt(v, unit):
    if v is None:
        return "-"
    return f"{v * 1e3:.3f} ms" if unit == "s" else f"{v / 2**30:.3f} GiB"
for r in runs:
    name, prec, mb, flags = r.split("|")
    c = json.load(open(os.path.join(out, f"compare-{name}.json")))
    for row in c["rows"]:
        e = row.get("error_pct")
        err = "-" if e is None else f"{e:+.1f} %"
        print(f"| {name} | {prec} | {row['name']} | {fmt(row.get('predicted'), row['unit'])} | "
              f"{fmt(row.get('measured'), row['unit'])} | {err} |")
print("\nModels: `planner model gpt` with " + "; ".join(f"{r.split('|')[0]}: `{r.split('|')[3]} --batch {r.split('|')[2]}`" for r in runs)
      + "; one device, global batch = micro-batch, `--attention unfused`.")
PY
  [ $? = 0 ] || step "markdown: python3 failed (see above)"
else
  { echo "python3 missing: raw compare output"; for r in "${RUNS[@]}"; do cat "$OUT/compare-${r%%|*}.out"; done; } \
    >"$OUT/validation-executor.md"
fi
cat "$OUT/validation-executor.md"
step "done in $(($(date +%s) - T0)) s"
