#!/usr/bin/env bash
# Executor benchmark: prediction against measurement on this host (issue:
# bundled executor). Calibrates CPU profiles with `planner calibrate
# --backend cpu` (1 rank, and 2 ranks under mpirun), writes plans for a small
# GPT with `planner estimate` on those profiles (1 rank; data, tensor and
# pipeline parallel on 2 ranks), times each with `planner run --replay` and
# sets prediction against measurement with `planner compare --json`.
#
# Usage: tools/bench_executor.sh PATH/TO/planner [--doc FILE.md]
#   prints one JSON document (planner.bench-executor/v1) on stdout;
#   --doc also writes the markdown table (docs/validation-executor.md).
# Goal: |predicted - measured| / measured <= 15 % for every plan.
# The calibration never times the plans: it sweeps kernels and collectives
# only (docs/calibrate.md). Run it on an idle host: other jobs on the cores
# slow the measurement and not the prediction.
set -euo pipefail
BIN_ARG=${1:?usage: tools/bench_executor.sh PATH/TO/planner [--doc FILE.md]}
BIN=$(readlink -f "$BIN_ARG")
DOC=""
if [ "${2:-}" = "--doc" ]; then DOC=$(readlink -f "${3:?--doc needs a file}"); fi
STEPS=${BENCH_EXECUTOR_STEPS:-5}
WARMUP=${BENCH_EXECUTOR_WARMUP:-2}
GOAL_PCT=15
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
work=$(mktemp -d)
# BENCH_EXECUTOR_KEEP=DIR keeps the profiles, plans and measurements there.
trap 'if [ -n "${BENCH_EXECUTOR_KEEP:-}" ]; then mkdir -p "$BENCH_EXECUTOR_KEEP" && cp "$work"/*.json "$BENCH_EXECUTOR_KEEP"/; fi; rm -rf "$work"' EXIT
cd "$work"
log() { echo "bench_executor: $*" >&2; }
run_quiet() { "$@" >"$work/out.txt" 2>"$work/err.txt" || { echo "bench_executor: '$*' failed: $(head -c 400 "$work/err.txt")" >&2; exit 1; }; }

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
log "calibrating (1 rank, then 2 ranks; about a minute)"
run_quiet "$BIN" calibrate --backend cpu -o cpu1.json
run_quiet mpirun -n 2 "$BIN" calibrate --backend cpu -o cpu2.json

# The model: a 4-layer GPT, hidden 512, 8 heads, sequence 256, vocabulary
# 2048, micro-batch 4 (the ONNX batch), global batch 8; fp32 (OpenBLAS has
# sgemm only), unfused attention (no fused attention kernel on the CPU).
MODEL=(gpt --layers 4 --hidden 512 --heads 8 --seq 256 --vocab 2048 --batch 4)
run_quiet "$BIN" model "${MODEL[@]}" -o gpt.onnx
COMMON=(--micro-batch 4 --global-batch 8 --precision fp32 --attention unfused)

# name ranks profile estimate-flags...
CASES=(
  "single 1 cpu1 --devices 1"
  "dp2 2 cpu2 --devices 2"
  "tp2 2 cpu2 --devices 2 --tp 2"
  "pp2 2 cpu2 --devices 2 --pp 2"
)
: >cases.jsonl
: >rows.md
for c in "${CASES[@]}"; do
  read -r name ranks profile flags <<<"$c"
  log "$name: estimate, run --replay on $ranks rank(s), compare"
  # shellcheck disable=SC2086
  run_quiet "$BIN" estimate gpt.onnx --profile "$profile.json" $flags "${COMMON[@]}" -o "$name.plan.json"
  run_quiet mpirun -n "$ranks" "$BIN" run "$name.plan.json" --replay --steps "$STEPS" --warmup "$WARMUP" \
    -o "$name.measured.json"
  "$BIN" compare "$name.plan.json" "$name.measured.json" --json >"$name.compare.json"
  python3 - "$name" "$name.compare.json" "$GOAL_PCT" "$flags" >>cases.jsonl 3>>rows.md <<'EOF'
import json, sys
name, path, goal, flags = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
d = json.load(open(path))
rows = {r["name"]: r for r in d["rows"]}
# Error of the prediction against the measurement: (predicted - measured) / measured.
def err_of(r):
    p, m = r.get("predicted"), r.get("measured")
    return None if p is None or not m else 100.0 * (p - m) / m
st = rows["step_time"]
err = err_of(st)
ok = abs(err) <= goal
comp = {k: {"predicted_s": r.get("predicted"), "measured_s": r.get("measured"), "error_pct": err_of(r)}
        for k, r in rows.items() if k != "step_time" and not k.startswith("peak_memory")}
case = {"name": f"executor_{name}", "layout": flags, "predicted_s": st["predicted"], "measured_s": st["measured"],
        "error_pct": err, "goal_pct": goal, "meets_goal": ok, "components": comp}
def pct(r):
    e = err_of(r)
    return "-" if e is None else f"{e:+.1f} %"
parts = "; ".join(f"{k} {pct(r)}" for k, r in rows.items()
                  if k not in ("step_time",) and not k.startswith("peak_memory") and r.get("measured"))
md = f"| {name} | `{flags}` | {st['predicted']:.4f} | {st['measured']:.4f} | {err:+.1f} % | {'yes' if ok else 'no'} | {parts} |"
print(json.dumps(case, separators=(",", ":")))
with open(3, "w", closefd=False) as f:
    print(md, file=f)
EOF
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
printf '{"format":"planner.bench-executor/v1","date":"%s","host":"%s","cpu":"%s","cores":%s,"loadavg_before":"%s","loadavg_after":"%s","steps":%s,"warmup":%s,"cases":[%s]}\n' \
  "$date" "$(hostname)" "$cpu" "$(nproc)" "$load_before" "$load_after" "$STEPS" "$WARMUP" "$(paste -sd, cases.jsonl)"

if [ -n "$DOC" ]; then
  {
    echo "# Executor validation: predicted against measured on the CPU backend"
    echo
    echo "Written by \`tools/bench_executor.sh $BIN_ARG --doc docs/validation-executor.md\`"
    echo "(part of \`make bench\`) on $date, host \`$(hostname)\` ($cpu, $(nproc) cores),"
    echo "load average $load_before before and $load_after after."
    echo
    echo "Profiles: \`planner calibrate --backend cpu\` on 1 rank and \`mpirun -n 2 planner calibrate"
    echo "--backend cpu\` on 2 ranks (kernel and collective sweeps only: the calibration never times"
    echo "these plans). Model: \`planner model ${MODEL[*]}\`; plans from \`planner estimate\`"
    echo "with \`${COMMON[*]}\` on those profiles; measured with \`mpirun -n K planner run PLAN"
    echo "--replay --steps $STEPS --warmup $WARMUP\` (median step), compared with \`planner compare\`."
    echo "Goal: every step time within $GOAL_PCT % of the measurement."
    echo
    echo "| plan | layout | predicted s | measured s | error | within $GOAL_PCT % | components (error) |"
    echo "|---|---|---|---|---|---|---|"
    cat rows.md
    echo
    echo "Errors are (predicted - measured) / measured (\`planner compare\` prints the measurement"
    echo "relative to the prediction instead); a component is listed where it was measured (non-zero)."
  } >"$DOC.tmp"
  mv "$DOC.tmp" "$DOC"
  log "wrote $DOC"
fi
