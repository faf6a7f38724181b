#!/usr/bin/env bash
# tools/gpu-validate.sh: checks the CUDA backend on a GPU machine and writes
# the figures for docs/validation-executor.md (docs/executor.md, "Validating
# on a GPU"). Run from the repository root of a fresh checkout:
#
#   OUT=/some/dir tools/gpu-validate.sh        # OUT defaults to ./gpu-validate-out
#
# Steps (each logged to $OUT/<step>.out and .err, progress on stdout and in
# $OUT/gpu-validate.log); any step that fails stops the script with
# "FAILED: <step>" and exit 1:
#   1. preflight: the tools and Debian packages the build needs (cmake, ninja,
#      a C++ compiler, nvcc, the -dev packages of tools/bootstrap.sh), the
#      GPU (nvidia-smi). The machine may be offline: whatever is missing is
#      named, and tools/bootstrap.sh is tried once (it needs the network).
#      PLANNER_PREBUILT=DIR skips the build and uses DIR/planner and
#      DIR/tests/runtime_cuda_test (built elsewhere by the cuda preset;
#      their shared libraries must resolve here, ldd is checked).
#   2. configure the cuda preset, build planner and runtime_cuda_test
#   3. the [gpu] unit tests (cuBLAS GEMMs, kernels, timer, NCCL, the GPU op
#      kernels and the GPU interpreter against the CPU ones) and the gpu_cli
#      ctest (the CLI's CUDA backends end to end, quick)
#   4. planner calibrate --backend cuda -o $OUT/h200.json (full sweep)
#   5. the GPU real mode: a small GPT planned on one device in fp32 and in
#      bf16, `planner run --backend cuda --check` (every step of 3 against
#      the CPU interpreter: 1e-5 in fp32, 5e-2 in bf16)
#   6. per model: planner model gpt, planner estimate --profile $OUT/h200.json,
#      planner run --replay --backend cuda, planner compare
#   7. $OUT/validation-executor.md: the calibration, the --check results and
#      predicted vs measured as markdown tables
# Budget: about 9 minutes on a 16-core H200 machine (the build is most of it).
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

# 1. Preflight: tools, packages and the GPU.
step "backend $BACKEND, output in $OUT, $JOBS cores"
PREBUILT=${PLANNER_PREBUILT:-}
if [ "$BACKEND" = cuda ]; then
  run nvidia-smi 60 nvidia-smi || die "nvidia-smi: no GPU driver or no GPU"
  PRESET=cuda
else
  PRESET=default
fi
if [ -z "$PREBUILT" ]; then
  # What `cmake --preset $PRESET` needs (tools/bootstrap.sh's build packages).
  NEED_PKGS=(cmake ninja-build pkg-config libcli11-dev nlohmann-json3-dev libprotobuf-dev protobuf-compiler
    libonnx-dev libboost-graph-dev catch2 libfmt-dev libopenmpi-dev openmpi-bin libopenblas-dev coinor-libcbc-dev)
  missing_tools() {
    local m=()
    for t in cmake ninja c++ pkg-config; do command -v "$t" >/dev/null || m+=("$t"); done
    if [ "$BACKEND" = cuda ]; then command -v nvcc >/dev/null || m+=("nvcc (CUDA toolkit)"); fi
    if command -v dpkg-query >/dev/null; then
      for p in "${NEED_PKGS[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || m+=("$p")
      done
    fi
    echo "${m[*]}"
  }
  MISSING=$(missing_tools)
  if [ -n "$MISSING" ]; then
    step "missing to build: $MISSING; trying tools/bootstrap.sh (needs the network)"
    run bootstrap 600 tools/bootstrap.sh || step "bootstrap failed (offline?)"
    MISSING=$(missing_tools)
    [ -z "$MISSING" ] || die "cannot build here, missing: $MISSING. Install them (tools/bootstrap.sh lists the Debian \
packages; this machine could not fetch them), or build with \`cmake --preset $PRESET\` elsewhere and rerun with \
PLANNER_PREBUILT=<that build dir>"
  fi
  if [ "$BACKEND" = cuda ]; then
    [ -e /usr/include/nccl.h ] || [ -e "$(dirname "$(dirname "$(command -v nvcc)")")/include/nccl.h" ] ||
      step "warning: nccl.h not found beside the CUDA toolkit or in /usr/include; configure will say if NCCL is missing"
  fi
fi
LAUNCH=()
if command -v ccache >/dev/null; then
  LAUNCH=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi

# 2. Configure and build (or take the prebuilt binaries).
if [ -n "$PREBUILT" ]; then
  BUILD=$(cd "$PREBUILT" && pwd) || die "PLANNER_PREBUILT=$PREBUILT is not a directory"
  for f in "$BUILD/planner" "$BUILD/tests/runtime_cuda_test"; do
    [ "$BACKEND" = cpu ] && [ "$f" = "$BUILD/tests/runtime_cuda_test" ] && continue
    [ -x "$f" ] || die "PLANNER_PREBUILT: $f is missing"
    UNRESOLVED=$(ldd "$f" 2>/dev/null | grep "not found" | awk '{print $1}' | tr '\n' ' ')
    [ -z "$UNRESOLVED" ] || die "$f needs shared libraries this machine lacks: $UNRESOLVED"
  done
  step "prebuilt binaries from $BUILD"
else
  run configure 300 cmake --preset "$PRESET" "${LAUNCH[@]}" || die "configure (see $OUT/configure.err)"
  if [ "$BACKEND" = cuda ]; then
    grep -q "runtime_cuda is not built" "$OUT/configure.err" && die "configure found no CUDA toolkit/NCCL (see configure.err)"
    TARGETS=(planner runtime_cuda_test)
  else
    TARGETS=(planner)
  fi
  run build 420 cmake --build "build/$PRESET" -j"$JOBS" --target "${TARGETS[@]}" || die "build (see $OUT/build.out)"
  BUILD=$ROOT/build/$PRESET
fi
BIN=$BUILD/planner

# 3. The [gpu] unit tests.
if [ "$BACKEND" = cuda ]; then
  run gpu-tests 300 "$BUILD/tests/runtime_cuda_test" "[gpu]" || die "[gpu] tests (see $OUT/gpu-tests.out)"
  # The CLI's CUDA backends end to end (quick calibration, replay, compare).
  run gpu-cli 300 bash tests/runtime_cuda/gpu_cli_test.sh "$BIN" || die "gpu_cli (see $OUT/gpu-cli.out)"
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

# 5. The real mode on one GPU against the CPU interpreter (--check).
CHECKS=()
for prec in fp32 bf16; do
  name=check-gpt-$prec
  run "model-$name" 120 "$BIN" model gpt --layers 2 --hidden 256 --heads 4 --seq 128 --vocab 1024 --batch 4 \
    -o "$OUT/$name.onnx" --force || die "model for $name"
  run "estimate-$name" 120 "$BIN" estimate "$OUT/$name.onnx" --profile "$PROFILE" --devices 1 --micro-batch 4 \
    --global-batch 4 --precision "$prec" --attention unfused -o "$OUT/plan-$name.json" --force || die "estimate $name"
  run "run-$name" 300 "$BIN" run "$OUT/plan-$name.json" --backend "$BACKEND" --check --steps 3 --warmup 1 \
    -o "$OUT/measured-$name.json" --force || die "$name: planner run --backend $BACKEND --check (see $OUT/run-$name.out/.err)"
  grep -q "^check step 3: " "$OUT/run-$name.out" || die "$name: no check line for step 3"
  rm -f "$OUT/$name.onnx"
  CHECKS+=("$name")
  [ "$BACKEND" = cuda ] || break  # the CPU real mode is fp32 only
done

# 6. Predicted against measured, one GPU. name: planner model gpt flags; micro-batch.
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
  run "model-$name" 120 "$BIN" model gpt $flags --batch "$mb" -o "$OUT/$name.onnx" --force || die "model $name"
  run "estimate-$name" 120 "$BIN" estimate "$OUT/$name.onnx" --profile "$PROFILE" --devices 1 \
    --micro-batch "$mb" --global-batch "$mb" --precision "$prec" --attention unfused \
    -o "$OUT/plan-$name.json" --force || die "estimate $name"
  run "run-$name" 180 "$BIN" run "$OUT/plan-$name.json" --replay --backend "$BACKEND" "${STEPS[@]}" \
    -o "$OUT/measured-$name.json" --force || die "replay $name (see $OUT/run-$name.out/.err)"
  run "compare-$name" 60 "$BIN" compare "$OUT/plan-$name.json" "$OUT/measured-$name.json" || die "compare $name"
  "$BIN" compare --json "$OUT/plan-$name.json" "$OUT/measured-$name.json" >"$OUT/compare-$name.json" 2>/dev/null
  rm -f "$OUT/$name.onnx"  # shapes only, rebuilt by the same command; keeps $OUT small
  RUNS+=("$name|$prec|$mb|$flags")
done
[ "${#RUNS[@]}" -gt 0 ] || die "no model ran end to end"

# 7. Markdown for docs/validation-executor.md.
step "writing $OUT/validation-executor.md"
if command -v python3 >/dev/null; then
  CHECK_NAMES="${CHECKS[*]}" python3 - "$OUT" "$PROFILE" "$BACKEND" "${RUNS[@]}" >"$OUT/validation-executor.md" <<'PY'
import json, os, sys
out, profile, backend, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
checks = os.environ.get("CHECK_NAMES", "").split()
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
print(f"\n### Real mode against the CPU interpreter (`planner run --backend {backend} --check`)\n")
print("A GPT of 2 layers, hidden 256, 4 heads, sequence 128, vocabulary 1024, batch 4, planned on one device; "
      "3 steps (AdamW), each compared with the CPU interpreter started from the GPU's weights: the loss, every gradient, and every updated weight against the CPU optimizer on the GPU's gradients; "
      "error as `planner run --check` defines it (the GPU real mode: relative to the tensor's largest magnitude).\n")
print("| plan | step | loss | CPU reference | max error | worst | tolerance |\n|---|---|---|---|---|---|---|")
import re
for name in checks:
    for line in open(os.path.join(out, f"run-{name}.out")):
        m = re.match(r"check step (\d+): loss (\S+) vs (?:CPU )?reference (\S+); max (?:relative )?error (\S+) \((.*)\) <= (\S+): ok", line)
        if m:
            print(f"| {name} | {m[1]} | {m[2]} | {m[3]} | {m[4]} | {m[5]} | {m[6]} |")
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
  [ $? = 0 ] || die "markdown: python3 failed (see above)"
else
  { echo "python3 missing: raw check and compare output"; for c in "${CHECKS[@]}"; do grep "^check step" "$OUT/run-$c.out"; done
    for r in "${RUNS[@]}"; do cat "$OUT/compare-${r%%|*}.out"; done; } \
    >"$OUT/validation-executor.md"
fi
cat "$OUT/validation-executor.md"
step "done in $(($(date +%s) - T0)) s"
