#!/usr/bin/env bash
# tools/fuzz.sh [SECONDS] [TARGET...]
# Builds the libFuzzer targets (fuzz/, clang-16, ASan+UBSan) in build/fuzz and
# runs each for SECONDS (default 60), then prints a summary. Targets:
# fuzz_onnx_import (the ONNX importer), fuzz_profile (the profile reader) and
# fuzz_plan (the plan reader).
#
# Seeds: tests/bad_inputs (and its fuzz_found/), models/, cost_profiles/, fuzz/seeds/, and
# the third-party models in shared/models/real or ../shared/models/real when
# present. The growing corpus lives in build/fuzz/corpus/<target>; crashes,
# timeouts and OOMs in build/fuzz/artifacts/<target>/. Reproduce one with
#   build/fuzz/fuzz/<target> ARTIFACT
# and keep it as a regression seed under tests/bad_inputs/fuzz_found/<onnx|profile>/.
#
# Environment: FUZZ_CC / FUZZ_CXX (default clang-16 / clang++-16),
# FUZZ_BUILD_DIR (default build/fuzz), FUZZ_KEEP_GOING=0 to stop at the first
# crash (default 1: -fork=1 with crashes, timeouts and OOMs recorded and skipped).
# Needs: apt-get install clang-16 libclang-rt-16-dev (clang-14 cannot compile
# the project's std::views code).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SECS=${1:-60}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(fuzz_onnx_import fuzz_profile fuzz_plan)
BUILD=${FUZZ_BUILD_DIR:-$ROOT/build/fuzz}
CC_=${FUZZ_CC:-clang-16}
CXX_=${FUZZ_CXX:-clang++-16}
KEEP_GOING=${FUZZ_KEEP_GOING:-1}

if ! command -v "$CXX_" >/dev/null; then
  echo "fuzz: $CXX_ not found; install clang-16 and libclang-rt-16-dev" >&2
  exit 2
fi
t_build=$(date +%s)
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  CC=$CC_ CXX=$CXX_ cmake -S "$ROOT" -B "$BUILD" -G Ninja -DPLANNER_FUZZ=ON -DPLANNER_BUILD_TESTS=OFF \
    -DPLANNER_ENABLE_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >/dev/null
fi
if ! cmake --build "$BUILD" --target "${TARGETS[@]}"; then
  echo "fuzz: build failed (does the top-level CMakeLists.txt add_subdirectory(fuzz) when PLANNER_FUZZ is ON?)" >&2
  exit 2
fi
echo "fuzz: build of ${TARGETS[*]} took $(( $(date +%s) - t_build )) s"

# Symbolized stack traces: llvm-16's symbolizer, else any llvm-symbolizer on PATH.
if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ]; then
  for s in /usr/lib/llvm-16/bin/llvm-symbolizer "$(command -v llvm-symbolizer || true)"; do
    if [ -n "$s" ] && [ -x "$s" ]; then export ASAN_SYMBOLIZER_PATH=$s; break; fi
  done
fi

shared=""
for d in "$ROOT/shared/models/real" "$ROOT/../shared/models/real"; do
  if [ -d "$d" ]; then shared=$d; break; fi
done

# seed_files TARGET: the seed files of a target, one per line.
seed_files() {
  case "$1" in
    fuzz_onnx_import)
      find "$ROOT/tests/bad_inputs" -type f -name '*.onnx'
      [ -d "$ROOT/tests/bad_inputs/fuzz_found/onnx" ] && find "$ROOT/tests/bad_inputs/fuzz_found/onnx" -type f
      find "$ROOT/models" -type f -name '*.onnx'
      [ -n "$shared" ] && find "$shared" -type f -name '*.onnx'
      ;;
    fuzz_profile)
      find "$ROOT/tests/bad_inputs" -type f -name '*.json'
      [ -d "$ROOT/tests/bad_inputs/fuzz_found/profile" ] && find "$ROOT/tests/bad_inputs/fuzz_found/profile" -type f
      find "$ROOT/cost_profiles" -type f -name '*.json'
      ;;
    fuzz_plan)
      find "$ROOT/fuzz/seeds/plan" -type f
      [ -d "$ROOT/tests/bad_inputs/fuzz_found/plan" ] && find "$ROOT/tests/bad_inputs/fuzz_found/plan" -type f
      ;;
  esac
  return 0
}

max_len() {
  case "$1" in
    fuzz_onnx_import) echo $((1024 * 1024)) ;;
    *) echo 65536 ;;
  esac
}

summary=()
status=0
for t in "${TARGETS[@]}"; do
  bin="$BUILD/fuzz/$t"
  corpus="$BUILD/corpus/$t"
  seeds="$BUILD/seeds/$t"
  art="$BUILD/artifacts/$t"
  log="$BUILD/$t.log"
  limit=$(max_len "$t")
  mkdir -p "$corpus" "$art"
  rm -rf "$seeds" && mkdir -p "$seeds"
  n=0
  # Seeds longer than -max_len are left out (libFuzzer would cut them into a
  # different input). fuzz_found/ reproducers are seeds too: regression inputs
  # once fixed; until then FUZZ_KEEP_GOING=1 (fork mode) records and skips them.
  while IFS= read -r f; do
    [ -n "$f" ] || continue
    [ "$(stat -c %s "$f")" -le "$limit" ] || continue
    n=$((n + 1))
    cp "$f" "$seeds/$(printf '%04d' "$n")_$(basename "$f")"
  done < <(seed_files "$t" | LC_ALL=C sort)
  extra=()
  [ -f "$ROOT/fuzz/${t#fuzz_}.dict" ] && extra+=("-dict=$ROOT/fuzz/${t#fuzz_}.dict")
  if [ "$KEEP_GOING" = 1 ]; then
    extra+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  fi
  find "$art" -type f | LC_ALL=C sort >"$BUILD/$t.before"
  echo "fuzz: $t for ${SECS}s ($n seeds, corpus $(find "$corpus" -type f | wc -l) inputs, log $log)"
  rc=0
  (cd "$BUILD" && ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
    "$bin" -max_total_time="$SECS" -timeout=20 -rss_limit_mb=4096 -max_len="$limit" \
    -artifact_prefix="$art/" -print_final_stats=1 "${extra[@]}" "$corpus" "$seeds") >"$log" 2>&1 || rc=$?
  stats=$(grep -E 'cov: [0-9]+' "$log" | tail -1 | sed -E 's/^#?([0-9]+)[^c]*(cov: [0-9]+ ft: [0-9]+ corp: [0-9/]+[a-zA-Z]*).*exec\/s: ([0-9]+).*/\1 execs, \2, \3 exec\/s/' || true)
  find "$art" -type f | LC_ALL=C sort >"$BUILD/$t.after"
  new=$(comm -13 "$BUILD/$t.before" "$BUILD/$t.after" | wc -l)
  line="$t: ${SECS}s: ${stats:-no stats}; new artifacts: $new (total $(find "$art" -type f | wc -l)); libFuzzer exit $rc"
  summary+=("$line")
  if [ "$new" -gt 0 ] || { [ "$rc" -ne 0 ] && [ "$KEEP_GOING" != 1 ]; }; then status=1; fi
  # Fork mode keeps no stack traces: replay each new crash once for its cause.
  while IFS= read -r a; do
    cause=""
    case "$(basename "$a")" in
      crash-*)
        cause=$( (cd "$BUILD" && timeout 60 "$bin" "$a" 2>&1) | grep -a -m1 -E 'invariant violated|^SUMMARY: |runtime error|ERROR: AddressSanitizer' \
                 | tr -c '[:print:]' '?' | cut -c1-160 || true) ;;
    esac
    summary+=("    new: $a ($(stat -c %s "$a") bytes)${cause:+: $cause}")
  done < <(comm -13 "$BUILD/$t.before" "$BUILD/$t.after" | head -20)
done

echo
echo "fuzz summary"
printf '  %s\n' "${summary[@]}"
[ "$status" -eq 0 ] || echo "  reproduce: $BUILD/fuzz/<target> ARTIFACT (save it under tests/bad_inputs/fuzz_found/)"
exit "$status"
