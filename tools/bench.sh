#!/usr/bin/env bash
# Benchmark harness: times planner's heavy paths and prints one JSON document.
# Usage: tools/bench.sh PATH/TO/planner      (make bench builds the release preset first)
# Each case runs REPEAT times (default 3); the JSON holds the best and median wall time.
set -euo pipefail
BIN=${1:?usage: tools/bench.sh PATH/TO/planner}
REPEAT=${REPEAT:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

now() { date +%s.%N; }
# time_case NAME GOAL_SECONDS CMD...: prints a JSON object for the case.
time_case() {
  local name=$1 goal=$2; shift 2
  local times=()
  for _ in $(seq "$REPEAT"); do
    local t0 t1
    t0=$(now)
    "$@" >"$work/out.txt" 2>"$work/err.txt" || { echo "bench case $name failed: $(head -c 300 "$work/err.txt")" >&2; exit 1; }
    t1=$(now)
    times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.4f", b-a}')")
  done
  local sorted best median
  sorted=$(printf '%s\n' "${times[@]}" | sort -g)
  best=$(echo "$sorted" | head -1)
  median=$(echo "$sorted" | sed -n "$(( (REPEAT + 1) / 2 ))p")
  local ok; ok=$(awk -v m="$median" -v g="$goal" 'BEGIN{print (m <= g) ? "true" : "false"}')
  printf '{"name":"%s","best_s":%s,"median_s":%s,"goal_s":%s,"meets_goal":%s}' "$name" "$best" "$median" "$goal" "$ok"
}

GPT3=(gpt --layers 96 --hidden 12288 --heads 96 --seq 2048 --vocab 51200)
cases=()
cases+=("$(time_case model_gpt3_175b 1.0 "$BIN" model "${GPT3[@]}" -o "$work/gpt3.onnx" --force)")
cases+=("$(time_case inspect_gpt3_175b 1.0 "$BIN" inspect "$work/gpt3.onnx" --json)")
# GPT-3 175B on 1024 A100 (Megatron's SC'21 layout): goal 100 ms (issue: cost model).
cases+=("$(time_case estimate_gpt3_175b_1024_a100 0.1 "$BIN" estimate "$work/gpt3.onnx" --profile a100-sxm4-80gb \
  --devices 1024 --tp 8 --pp 16 --micro-batch 1 --global-batch 1536 --schedule interleaved --vp 2 --recompute full --json)")
# planner search, GPT-3 175B on 1024 A100, global batch 1536: goal 5 s (aim 1 s).
cases+=("$(time_case search_gpt3_175b_1024_a100 5.0 "$BIN" search "$work/gpt3.onnx" --devices 1024 --global-batch 1536 \
  -o "$work/plan_gpt3.json" --force --json)")
# planner search, LLaMA-3-8B-like on 64 H100, global batch 512 (op-level search included): goal 10 s.
"$BIN" model llama --layers 32 --hidden 4096 --heads 32 --kv-heads 8 --ffn 14336 --vocab 128256 --seq 8192 --batch 1 \
  -o "$work/llama8b.onnx" --force >/dev/null
cases+=("$(time_case search_llama3_8b_64_h100 10.0 "$BIN" search "$work/llama8b.onnx" --devices 64 --profile h100-sxm5-80gb \
  --global-batch 512 -o "$work/plan_llama.json" --force --json)")
"$BIN" inspect "$work/gpt3.onnx" --json >"$work/inspect.json.txt"
params=$(grep -m1 '"count"' "$work/inspect.json.txt" | tr -dc '0-9')
printf '{"format":"planner.bench/v1","date":"%s","host":"%s","cores":%s,"repeat":%s,"gpt3_parameters":%s,"cases":[%s]}\n' \
  "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(hostname)" "$(nproc)" "$REPEAT" "${params:-0}" "$(IFS=,; echo "${cases[*]}")"
