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
#   7. planner validate --backend cuda on one GPU: a small GPT searched on
#      the calibrated profile, its best layouts (micro-batch, recompute,
#      ZeRO-irrelevant options) and the dp=1 baseline run interleaved over
#      rounds, the GPU real mode where a layout is one micro-batch a step,
#      the replay otherwise: $OUT/validate.json (docs/validate-format.md)
#      and the table in $OUT/validate-gpt.out
#   8. $OUT/validation-executor.md: the calibration, the --check results and
#      predicted vs measured as markdown tables
# Budget: about 9 minutes on a 16-core H200 machine (the build is most of it).
#
# PLANNER_VALIDATE_BACKEND=cpu runs the same steps on the CPU (default preset,
# --backend cpu, quick sweep, smaller models, fp32): a dry run of this script
# on a machine without a GPU; its figures are not GPU figures.
#
# For a short lease on a GPU machine (each variable optional; unset, the
# script behaves as described above):
#   PLANNER_VALIDATE_KEEP_GOING=1   a failed step is recorded and the script
#       goes on with the steps that do not need it; exit 1 at the end if any
#       step failed
#   PLANNER_VALIDATE_STEPS="tests check calibrate replay cli validate"   the
#       order of steps 3-7 (tests: the [gpu] unit tests; cli: the gpu_cli
#       ctest; calibrate: 4; check: 5; replay: 6; validate: 7); default
#       "tests cli calibrate check replay validate". Before (or without) a
#       calibration, 5, 6 and 7 plan with
#       PLANNER_VALIDATE_FALLBACK_PROFILE (default
#       cost_profiles/h200-sxm-141gb.json)
#   PLANNER_VALIDATE_DEADLINE_S=N   every step's time limit is cut to what is
#       left of N seconds from the start; a step with under 10 s left is skipped
#   PLANNER_VALIDATE_LIMIT_{TESTS,CLI,CALIBRATE,MODEL,ESTIMATE,CHECK,REPLAY,COMPARE,VALIDATE}
#       one step's limit in seconds (defaults 300 300 300 120 120 300 180 60 300)
#   PLANNER_VALIDATE_TESTS_SPLIT=1  the [gpu] tests one test file at a time
#       (tag [#<file>]), each with its own limit, so one hang loses one file
#   PLANNER_VALIDATE_QUICK_FALLBACK=1   a failed full calibration is followed
#       by `calibrate --quick` (profile h200-quick.json)
# Each step's status (ok, failed, timeout, skipped), seconds and exit code go
# to $OUT/steps.tsv.
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
KEEP_GOING=${PLANNER_VALIDATE_KEEP_GOING:-0}
DEADLINE=${PLANNER_VALIDATE_DEADLINE_S:-0}
FAILED=()
step() { echo "[gpu-validate +$(($(date +%s) - T0))s] $*"; }
die() {
  step "FAILED: $*"
  exit 1
}
# fail MSG: die, or with PLANNER_VALIDATE_KEEP_GOING=1 note MSG and return 1.
fail() {
  [ "$KEEP_GOING" = 1 ] || die "$@"
  step "FAILED (going on): $*"
  FAILED+=("$*")
  return 1
}
# lim KIND DEFAULT: PLANNER_VALIDATE_LIMIT_<KIND>, else DEFAULT.
lim() {
  local v="PLANNER_VALIDATE_LIMIT_$1"
  echo "${!v:-$2}"
}
printf 'step\tstatus\tseconds\trc\n' >"$OUT/steps.tsv"
record() { printf '%s\t%s\t%s\t%s\n' "$@" >>"$OUT/steps.tsv"; }
# run NAME LIMIT_S CMD...: runs CMD with a time limit, output to $OUT/NAME.{out,err}.
run() {
  local name=$1 limit=$2
  shift 2
  if [ "$DEADLINE" -gt 0 ]; then
    local left=$((DEADLINE - ($(date +%s) - T0)))
    if [ "$left" -lt 10 ]; then
      step "$name: skipped, ${left} s left of PLANNER_VALIDATE_DEADLINE_S=$DEADLINE"
      record "$name" skipped 0 -
      return 124
    fi
    [ "$limit" -le "$left" ] || limit=$left
  fi
  step "$name: $*"
  local t
  t=$(date +%s)
  timeout -k 10 "$limit" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
  local rc=$?
  local st=ok
  [ "$rc" = 0 ] || st=failed
  [ "$rc" = 124 ] || [ "$rc" = 137 ] && st=timeout
  record "$name" "$st" "$(($(date +%s) - t))" "$rc"
  tail -n 25 "$OUT/$name.out"
  [ "$rc" = 0 ] || { tail -n 25 "$OUT/$name.err"; step "$name exited $rc${st/#failed/}"; }
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
phase_tests() {
  [ "$BACKEND" = cuda ] || return 0
  local T=$BUILD/tests/runtime_cuda_test
  if [ "${PLANNER_VALIDATE_TESTS_SPLIT:-0}" = 1 ]; then
    # One run per test file (Catch2's -# tags), so a hang or crash costs one file.
    local files
    files=$("$T" -# --list-tags "[gpu]" 2>/dev/null | grep -o '\[#[A-Za-z0-9_]*\]' | tr -d '[]#' | sort -u)
    [ -n "$files" ] || files=$(find tests/runtime_cuda -maxdepth 1 -name '*_test.cpp' -printf '%f\n' |
      sed 's|\.cpp$||' | grep -v -E '^(kernel_math|gpu_emulated)_test$' | sort)
    step "[gpu] tests by file: $(echo "$files" | tr '\n' ' ')"
    local f
    for f in $files; do
      run "gpu-tests-$f" "$(lim TESTS 300)" "$T" -# "[#$f][gpu]" --durations yes ||
        fail "[gpu] tests of $f (see $OUT/gpu-tests-$f.out)" || continue
      no_gpu_skip "gpu-tests-$f" || :
    done
  else
    run gpu-tests "$(lim TESTS 300)" "$T" "[gpu]" || fail "[gpu] tests (see $OUT/gpu-tests.out)" || return 1
    no_gpu_skip gpu-tests
  fi
}
# The [gpu] tests pass, skipped, where CUDA finds no device: not a pass here.
no_gpu_skip() {
  grep -q "no GPU: skipped" "$OUT/$1.out" || return 0
  record "$1:no-gpu-skipped" failed 0 -
  fail "$1: CUDA found no GPU (cudaGetDeviceCount), the tests skipped themselves (see $OUT/$1.out)"
}
phase_cli() {
  [ "$BACKEND" = cuda ] || return 0
  # The CLI's CUDA backends end to end (quick calibration, replay, compare).
  run gpu-cli "$(lim CLI 300)" bash tests/runtime_cuda/gpu_cli_test.sh "$BIN" || fail "gpu_cli (see $OUT/gpu-cli.out)"
}

# 4. Calibration.
PROFILE=$OUT/h200.json
if [ "$BACKEND" = cuda ]; then
  PRECISIONS=(bf16 bf16 tf32)
else
  PROFILE=$OUT/cpu-dry-run.json
  PRECISIONS=(fp32 fp32 fp32)
fi
FALLBACK_PROFILE=${PLANNER_VALIDATE_FALLBACK_PROFILE:-$ROOT/cost_profiles/h200-sxm-141gb.json}
CALIBRATED=  # the profile calibrate wrote, once it has
phase_calibrate() {
  local quick_flag=()
  [ "$BACKEND" = cuda ] || quick_flag=(--quick)
  rm -f "$PROFILE"
  if run calibrate "$(lim CALIBRATE 300)" "$BIN" calibrate --backend "$BACKEND" "${quick_flag[@]}" -o "$PROFILE" --force &&
    [ -s "$PROFILE" ]; then
    CALIBRATED=$PROFILE
    return 0
  fi
  fail "calibrate" || :
  if [ "${PLANNER_VALIDATE_QUICK_FALLBACK:-0}" = 1 ]; then
    local quick=$OUT/${BACKEND/cuda/h200}-quick.json
    run calibrate-quick "$(lim CALIBRATE 300)" "$BIN" calibrate --backend "$BACKEND" --quick -o "$quick" --force &&
      [ -s "$quick" ] && { CALIBRATED=$quick; step "planning with the quick calibration $quick"; return 0; }
    fail "calibrate --quick" || :
  fi
  return 1
}
# plan_profile: the calibrated profile, else the fallback (said once per use).
plan_profile() {
  if [ -n "$CALIBRATED" ]; then echo "$CALIBRATED"; else echo "$FALLBACK_PROFILE"; fi
}

# 5. The real mode on one GPU against the CPU interpreter (--check).
CHECKS=()
phase_check() {
  local prof prec name
  prof=$(plan_profile)
  [ -n "$CALIBRATED" ] || step "check: no calibrated profile (yet), planning with $prof"
  for prec in fp32 bf16; do
    name=check-gpt-$prec
    check_one "$prof" "$prec" "$name" && CHECKS+=("$name")
    rm -f "$OUT/$name.onnx"
    [ "$BACKEND" = cuda ] || break  # the CPU real mode is fp32 only
  done
}
check_one() {
  local prof=$1 prec=$2 name=$3
  run "model-$name" "$(lim MODEL 120)" "$BIN" model gpt --layers 2 --hidden 256 --heads 4 --seq 128 --vocab 1024 --batch 4 \
    -o "$OUT/$name.onnx" --force || { fail "model for $name"; return 1; }
  run "estimate-$name" "$(lim ESTIMATE 120)" "$BIN" estimate "$OUT/$name.onnx" --profile "$prof" --devices 1 --micro-batch 4 \
    --global-batch 4 --precision "$prec" --attention unfused -o "$OUT/plan-$name.json" --force || { fail "estimate $name"; return 1; }
  run "run-$name" "$(lim CHECK 300)" "$BIN" run "$OUT/plan-$name.json" --backend "$BACKEND" --check --steps 3 --warmup 1 \
    -o "$OUT/measured-$name.json" --force ||
    { fail "$name: planner run --backend $BACKEND --check (see $OUT/run-$name.out/.err)"; return 1; }
  grep -q "^check step 3: " "$OUT/run-$name.out" || { fail "$name: no check line for step 3"; return 1; }
}

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
PLANNED_WITH=
phase_replay() {
  local i name flags mb prec prof
  prof=$(plan_profile)
  PLANNED_WITH=$prof
  [ -n "$CALIBRATED" ] || step "replay: no calibrated profile, predicting with $prof"
  for i in "${!MODELS[@]}"; do
    IFS='|' read -r name flags mb <<<"${MODELS[$i]}"
    prec=${PRECISIONS[$i]}
    replay_one "$prof" "$name" "$flags" "$mb" "$prec" && RUNS+=("$name|$prec|$mb|$flags")
    rm -f "$OUT/$name.onnx"  # shapes only, rebuilt by the same command; keeps $OUT small
  done
  [ "${#RUNS[@]}" -gt 0 ] || fail "no model ran end to end"
}
replay_one() {
  local prof=$1 name=$2 flags=$3 mb=$4 prec=$5
  # shellcheck disable=SC2086
  run "model-$name" "$(lim MODEL 120)" "$BIN" model gpt $flags --batch "$mb" -o "$OUT/$name.onnx" --force ||
    { fail "model $name"; return 1; }
  run "estimate-$name" "$(lim ESTIMATE 120)" "$BIN" estimate "$OUT/$name.onnx" --profile "$prof" --devices 1 \
    --micro-batch "$mb" --global-batch "$mb" --precision "$prec" --attention unfused \
    -o "$OUT/plan-$name.json" --force || { fail "estimate $name"; return 1; }
  run "run-$name" "$(lim REPLAY 180)" "$BIN" run "$OUT/plan-$name.json" --replay --backend "$BACKEND" "${STEPS[@]}" \
    -o "$OUT/measured-$name.json" --force || { fail "replay $name (see $OUT/run-$name.out/.err)"; return 1; }
  run "compare-$name" "$(lim COMPARE 60)" "$BIN" compare "$OUT/plan-$name.json" "$OUT/measured-$name.json" ||
    { fail "compare $name"; return 1; }
  "$BIN" compare --json "$OUT/plan-$name.json" "$OUT/measured-$name.json" >"$OUT/compare-$name.json" 2>/dev/null
}

# 7. planner validate on one GPU: the search's best layouts and the dp=1
# baseline, measured interleaved; tau, regret and the speedups in the JSON.
phase_validate() {
  local prof name flags mb
  prof=$(plan_profile)
  [ -n "$CALIBRATED" ] || step "validate: no calibrated profile, searching with $prof"
  IFS='|' read -r name flags mb <<<"${MODELS[0]}"  # the first replay model's shape
  # shellcheck disable=SC2086
  run model-validate "$(lim MODEL 120)" "$BIN" model gpt $flags --batch 2 -o "$OUT/validate-gpt.onnx" --force ||
    { fail "model for validate"; return 1; }
  run validate-gpt "$(lim VALIDATE 300)" "$BIN" validate "$OUT/validate-gpt.onnx" --backend "$BACKEND" --profile "$prof" \
    --devices 1 --global-batch 8 --max-micro-batch 8 --candidates 4 --baseline dp=1 "${STEPS[@]}" --rounds 3 \
    -o "$OUT/validate.json" --force ||
    { fail "planner validate --backend $BACKEND (see $OUT/validate-gpt.out/.err)"; return 1; }
  rm -f "$OUT/validate-gpt.onnx"
}

for phase in ${PLANNER_VALIDATE_STEPS:-tests cli calibrate check replay validate}; do
  case $phase in
    tests | cli | calibrate | check | replay | validate) "phase_$phase" ;;
    *) die "PLANNER_VALIDATE_STEPS: unknown step '$phase' (tests cli calibrate check replay validate)" ;;
  esac
done

# 8. Markdown for docs/validation-executor.md.
step "writing $OUT/validation-executor.md"
if command -v python3 >/dev/null; then
  CHECK_NAMES="${CHECKS[*]}" PLANNED_WITH="$PLANNED_WITH" python3 - "$OUT" "$CALIBRATED" "$BACKEND" "${RUNS[@]}" \
    >"$OUT/validation-executor.md" <<'PY'
import json, os, sys
out, profile, backend, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
checks = os.environ.get("CHECK_NAMES", "").split()
planned_with = os.environ.get("PLANNED_WITH", "")
if not profile:  # PLANNER_VALIDATE_KEEP_GOING=1 after a failed calibration
    print(f"## One-GPU checks ({backend}): no calibration\n")
    print(f"`planner calibrate --backend {backend}` did not complete (see calibrate.out/.err); "
          f"predictions below use `{os.path.relpath(planned_with) if planned_with else '-'}`.\n")
    p = {"provenance": {}, "device": {"name": "?", "peak_tflops": {}}}
else:
    p = json.load(open(profile))
prov, dev = p.get("provenance", {}), p["device"]
if profile:
    print(f"## {dev['name']}: calibration and one-GPU replay ({backend})\n")
    print(f"Measured {prov.get('date', '?')} on {prov.get('host', '?')} by `tools/gpu-validate.sh`.\n")
keys = ["device", "cuda_driver", "cuda_runtime", "cublas", "nccl", "mpi_library", "cpu_model", "openblas_config"]
print("| fact | value |\n|---|---|")
for k in keys:
    if k in prov:
        print(f"| {k} | {prov[k]} |")
if profile:
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
  [ $? = 0 ] || fail "markdown: python3 failed (see above)"
else
  { echo "python3 missing: raw check and compare output"; for c in "${CHECKS[@]}"; do grep "^check step" "$OUT/run-$c.out"; done
    for r in "${RUNS[@]}"; do cat "$OUT/compare-${r%%|*}.out"; done; } \
    >"$OUT/validation-executor.md"
fi
cat "$OUT/validation-executor.md"
if [ "${#FAILED[@]}" -gt 0 ]; then
  step "done in $(($(date +%s) - T0)) s; ${#FAILED[@]} step(s) FAILED:"
  printf '  %s\n' "${FAILED[@]}"
  exit 1
fi
step "done in $(($(date +%s) - T0)) s"
