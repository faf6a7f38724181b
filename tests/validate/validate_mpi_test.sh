#!/usr/bin/env bash
# `mpirun -n 2 planner validate` end to end on a tiny gpt (2 layers, hidden
# 32): the table's shape, the summary lines, the JSON fields
# (docs/validate-format.md), bad input and the --min-tau gate. Timings are
# not checked, only that they exist.
# Usage: validate_mpi_test.sh PLANNER_BIN MPIEXEC
set -u
bin=$(realpath "$1")
mpiexec=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export OPENBLAS_NUM_THREADS=1
failures=0
mpi() { local n=$1; shift; timeout -s KILL 120 "$mpiexec" --oversubscribe --mca btl self,vader -n "$n" "$bin" "$@"; }
. "$here/../executor/lib.sh"  # expect, contains
count() {  # name n regex: lines of out.txt matching regex
  local got
  got=$(grep -cE -- "$3" out.txt)
  if [[ $got != "$2" ]]; then echo "FAIL $1: $got lines match '$3' (want $2)"; cat out.txt; failures=$((failures + 1)); fi
}

"$bin" model gpt --layers 2 --hidden 32 --heads 2 --seq 8 --vocab 64 --batch 2 -o gpt.onnx >/dev/null || exit 1
common=(--global-batch 8 --max-micro-batch 4 --steps 1 --warmup 1 --rounds 2 --threads 1)

# Three candidates, the default baseline (dp=2) and tp=2: every row ran,
# the summary lines, the JSON written once.
expect "validate" 0 mpi 2 validate gpt.onnx "${common[@]}" --candidates 3 --baseline dp=2 --baseline tp=2 -o v.json \
  --report v.html
contains "validate" "planner validate: gpt.onnx on 2 ranks (backend cpu): 2 rounds x 1 steps after 1 warm-up, interleaved"
count "validate header" 1 '^ #  row +mode +predicted +measured +spread +error +speedup p/m +rank p/m  layout$'
count "validate candidates" 3 '^ [123]  (best|candidate [23]) +(real|replay) '
# tp=2: a row of its own, or a candidate's note.
count "validate baseline 2" 1 '(^ [1-5]  baseline 2 |^note: row [1-3] .*also baseline 2 \(tp=2\))'
count "validate tau" 1 '^tau          (-?[01]\.[0-9]{3} \(Kendall tau-b|undefined)'
count "validate regret" 1 '^regret       [0-9.]+ \(the predicted-best, row [0-9]'
count "validate speedup" 1 "^speedup      the search's choice (measured [0-9.]+ times faster than|is) the baseline \(dp=2\)"
count "validate wrote" 1 '^wrote v.json$'
count "validate wrote report" 1 '^wrote v.html$'
[ "$(grep -o '<circle [^>]*data-measured-s' v.html | wc -l)" -ge 3 ] || { echo "FAIL validate: v.html chart"; failures=$((failures + 1)); }
python3 - v.json <<'PY' || { echo "FAIL validate: v.json"; failures=$((failures + 1)); }
import json, sys
v = json.load(open(sys.argv[1]))
assert v["format"] == "planner.validate/v1" and v["devices"] == 2 and v["backend"] == "cpu", v
assert v["measurement"] == {"steps": 1, "warmup": 1, "rounds": 2, "order": "interleaved",
                            "statistic": "median over rounds of the median step per round"}, v["measurement"]
rows = v["rows"]
assert [r["role"] for r in rows[:3]] == ["candidate"] * 3 and rows[0]["name"] == "best", rows
assert len({r["layout"] for r in rows}) == len(rows), "near-duplicate rows"
for r in rows:
    assert r["ran"] and r["mode"] in ("real", "replay"), r
    assert len(r["rounds_s"]) == 2 and all(t > 0 for t in r["rounds_s"]), r
    assert r["measured_s"] > 0 and r["predicted_s"] > 0 and r["measured_rank"] >= 1, r
    assert r["measured_speedup"] > 0 and r["predicted_speedup"] > 0, r
s = v["summary"]
assert s["measured_rows"] == len(rows) and s["regret"] >= 1 and -1 <= s["kendall_tau"] <= 1, s
b = rows[s["baseline"] - 1]
assert b["name"] == "baseline 1" or "also baseline 1 (dp=2)" in b["note"], (s, b)
assert v["checks"] == [] and v["passed"] is True
PY

# The file is not replaced without --force.
expect "validate refuses overwrite" 2 mpi 2 validate gpt.onnx "${common[@]}" -o v.json
count "validate refuses overwrite" 1 '^planner validate: error: .*v.json'
# Bad baseline: one line naming the field.
expect "validate bad baseline" 2 mpi 2 validate gpt.onnx "${common[@]}" --baseline tp=x
count "validate bad baseline" 1 "^planner validate: error: --baseline 'tp=x': tp: 'x' is not a non-negative integer$"
expect "validate bad backend" 2 mpi 2 validate gpt.onnx "${common[@]}" --backend tpu
count "validate bad backend" 1 "^planner validate: error: --backend 'tpu' is not cpu or cuda$"
# --backend cuda: one line saying why not (a build without CUDA, a host
# without a GPU) before any search, or, on a GPU host, a run.
mpi 1 validate gpt.onnx "${common[@]}" --candidates 1 --backend cuda >out.txt 2>&1
rc=$?
if [[ $rc == 2 ]]; then
  count "validate cuda refused" 1 '^planner validate: error: --backend cuda: '
  count "validate cuda refused, one error line" 1 '^planner validate: error: '
elif [[ $rc != 0 ]]; then
  echo "FAIL validate cuda: exit $rc"; cat out.txt; failures=$((failures + 1))
fi
expect "validate bad --min-tau" 2 mpi 2 validate gpt.onnx "${common[@]}" --min-tau 2
count "validate bad --min-tau" 1 '^planner validate: error: --min-tau must be in \[-1, 1\] \(got 2\)$'
# A baseline that cannot be laid out on 2 devices is reported, not run.
# One candidate pinned to pure data parallelism is also the default
# baseline: one measured row, tau undefined, so --min-tau fails (exit 1).
expect "validate gate" 1 mpi 2 validate gpt.onnx --global-batch 8 --max-micro-batch 4 --steps 1 --warmup 1 --rounds 1 \
  --threads 1 --fix tp=1,pp=1 --candidates 1 --baseline dp=2 --baseline tp=4 --min-tau 0
count "validate gate rows" 2 '^ [12]  '
contains "validate gate" "also baseline 1 (dp=2)"
count "validate gate no fit" 1 '^ 2  baseline 2 +- +- +- '
count "validate gate FAIL" 1 '^FAIL  Kendall tau undefined \(1 measured row\(s\), or every time tied\) \(--min-tau 0\)$'
count "validate gate verdict" 1 '^validate     failed: 1 of 1 threshold\(s\) violated$'

# --plan files as the candidates (the search's flags still make the baselines).
"$bin" estimate gpt.onnx --devices 2 --micro-batch 4 --global-batch 8 -o p1.json >/dev/null || exit 1
"$bin" estimate gpt.onnx --devices 2 --tp 2 --micro-batch 4 --global-batch 8 -o p2.json >/dev/null || exit 1
"$bin" estimate gpt.onnx --devices 4 --micro-batch 2 --global-batch 8 -o p4.json >/dev/null || exit 1
expect "validate --plan" 0 mpi 2 validate gpt.onnx --plan p1.json --plan p2.json --steps 1 --warmup 0 --rounds 1 --threads 1
count "validate --plan rows" 2 '^ [12]  plan [12] +(real|replay) .* p[12].json: dp='
count "validate --plan baseline" 1 '^ 3  baseline 1 +(real|replay) '
expect "validate --plan devices" 2 mpi 2 validate gpt.onnx --plan p4.json
count "validate --plan devices" 1 '^planner validate: error: p4.json: the plan has 4 devices \(cluster.devices\) but 2 ranks were started$'

[ "$failures" = 0 ] && echo "validate_mpi: all passed"
exit "$failures"
