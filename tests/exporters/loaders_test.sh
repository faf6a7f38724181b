#!/usr/bin/env bash
# Every export loads with the parser its users' tools use (docs/export.md):
#   deepspeed   Python's json.load (Hugging Face Trainer / Accelerate
#               `--deepspeed ds_config.json`): strict JSON, no comments
#   torchtitan  tomllib.load (torchtitan's JobConfig reads the TOML with it)
#   megatron    sourced by bash; every argument of PLANNER_MEGATRON_ARGS is a
#               name of tests/exporters/names/megatron.tsv for the version
#   mindspore   compiled by Python (a syntax error would stop the script)
# over plans of several layout families written by `planner estimate`, at
# every framework version. --notes writes the header, LOST and note lines.
# Usage: loaders_test.sh PLANNER_BIN
set -u
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

"$bin" model gpt --layers 8 --hidden 256 --heads 8 --seq 128 --vocab 1024 --batch 1 -o gpt.onnx >/dev/null || exit 1
est() {  # name estimate-flags...
  local o=$1
  shift
  "$bin" estimate gpt.onnx --micro-batch 1 "$@" -o "$o.json" >/dev/null || { fail "estimate $o"; return 1; }
}
est dp8 --devices 8 --global-batch 16
est zero3 --devices 8 --global-batch 16 --zero 3 --framework deepspeed
est tp2pp2 --devices 8 --tp 2 --pp 2 --global-batch 16 --recompute full
est interleaved --devices 8 --tp 2 --pp 2 --vp 2 --schedule interleaved --sp --global-batch 16 --distributed-optimizer
est cp2 --devices 8 --cp 2 --tp 2 --global-batch 16 --recompute selective --precision fp16

versions() {  # framework: its versions as listed by --help
  case $1 in
    megatron) echo core_v0.12.0 core_v0.8.0 ;;
    *) echo "" ;;
  esac
}
for plan in dp8 zero3 tp2pp2 interleaved cp2; do
  [ -f "$plan.json" ] || continue
  for fw in deepspeed torchtitan megatron mindspore; do
    for v in $(versions $fw) ""; do
      [ "$fw" = megatron ] && [ -z "$v" ] && continue
      out="$plan.$fw${v:+.$v}"
      if ! "$bin" export "$plan.json" --to "$fw" ${v:+--framework-version "$v"} -o "$out.txt" --notes "$out.notes" \
        2>"$out.err"; then
        fail "export $out"; cat "$out.err"; continue
      fi
      grep -q "exported by planner" "$out.notes" || fail "$out: --notes has no header"
      # Every warning on stderr is a LOST line of the notes.
      while IFS= read -r w; do
        grep -qxF "LOST: ${w#planner export: warning: }" "$out.notes" || fail "$out: warning not in --notes: $w"
      done < <(grep '^planner export: warning: ' "$out.err")
      case $fw in
        deepspeed)
          python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); assert c["train_micro_batch_size_per_gpu"] == 1' \
            "$out.txt" || fail "$out: json.load"
          grep -q '//' "$out.txt" && fail "$out: a comment in strict JSON"
          ;;
        torchtitan)
          python3 -c 'import tomllib, sys; c = tomllib.load(open(sys.argv[1], "rb")); assert "parallelism" in c, c' \
            "$out.txt" || fail "$out: tomllib.load"
          ;;
        megatron)
          # shellcheck disable=SC1090
          names=$(bash -c 'source "$1" && printf "%s\n" "${PLANNER_MEGATRON_ARGS[@]}"' _ "$out.txt") ||
            { fail "$out: bash could not source it"; continue; }
          [ -n "$names" ] || fail "$out: no arguments"
          while IFS= read -r a; do
            [[ $a == --* ]] || continue
            awk -F'\t' -v n="$a" -v v="$v" '$1 == n && $3 == v { f = 1 } END { exit !f }' \
              "$here/names/megatron.tsv" || fail "$out: $a is not a Megatron-LM $v argument"
          done <<<"$names"
          ;;
        mindspore)
          python3 -c 'import sys; compile(open(sys.argv[1]).read(), sys.argv[1], "exec")' "$out.txt" ||
            fail "$out: Python cannot compile it"
          ;;
      esac
    done
  done
done
# A DeepSpeed export without --notes: its notes go to stderr (the JSON has none).
"$bin" export interleaved.json --to deepspeed -o ds.json 2>ds.err || fail "deepspeed without --notes"
grep -q '^planner export: note: pipeline: deepspeed.pipe.PipelineModule' ds.err || { fail "notes not on stderr"; cat ds.err; }
# --notes never replaces a file without --force.
echo mine >kept.txt
"$bin" export dp8.json --to deepspeed -o ds2.json --notes kept.txt 2>err.txt && fail "--notes replaced a file"
grep -q "kept.txt" err.txt || { fail "--notes refusal names no file"; cat err.txt; }
[ "$(cat kept.txt)" = mine ] || fail "kept.txt changed"

ran=$(find . -name '*.notes' | wc -l)
[ "$ran" -ge 20 ] || fail "only $ran exports ran"
echo "loaders: $ran exports, $failures failures"
[ "$failures" -eq 0 ]
