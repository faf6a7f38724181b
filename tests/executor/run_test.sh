#!/usr/bin/env bash
# `mpirun planner run --replay` and `planner compare` end to end on the plan
# fixtures of tests/executor/data (docs/executor.md).
# Usage: run_test.sh PLANNER_BIN MPIEXEC
# Each case checks the exit status and the lines printed; the stall case also
# checks that it ends within 30 s and leaves no process behind.
set -u
bin=$1
mpiexec=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export OPENBLAS_NUM_THREADS=1
"$bin" model gpt --layers 4 --hidden 64 --heads 4 --seq 32 --vocab 128 --batch 2 -o tiny.onnx >/dev/null || exit 1
cp "$here"/data/gpt_*.json .
failures=0
mpi() { local n=$1; shift; timeout -s KILL 120 "$mpiexec" --oversubscribe --mca btl self,vader -n "$n" "$bin" "$@"; }

expect() {  # name want_rc(0|nonzero|N) command... ; output in out.txt
  local name=$1 want=$2
  shift 2
  "$@" >out.txt 2>&1
  local rc=$?
  if [[ $want == 0 && $rc != 0 ]] || [[ $want == nonzero && $rc == 0 ]] ||
     [[ $want != 0 && $want != nonzero && $rc != "$want" ]]; then
    echo "FAIL $name: exit $rc (want $want)"; cat out.txt; failures=$((failures + 1)); return 1
  fi
  echo "ok   $name (exit $rc)"
}
has() {  # name count line: the line appears exactly count times in out.txt
  local got
  got=$(grep -cxF -- "$3" out.txt)
  if [[ $got != "$2" ]]; then
    echo "FAIL $1: '$3' printed $got times (want $2)"; cat out.txt; failures=$((failures + 1))
  fi
}
contains() {  # name text: out.txt contains text
  if ! grep -qF -- "$2" out.txt; then echo "FAIL $1: no '$2'"; cat out.txt; failures=$((failures + 1)); fi
}

# Healthy runs: every layout kind, measured.json written, compared.
for c in "2 gpt_tp2" "2 gpt_pp2" "2 gpt_dp2" "2 gpt_dp2_zero1" "4 gpt_tp2_pp2" "4 gpt_dp2_pp2_vp2"; do
  set -- $c
  expect "run $2 on $1 ranks" 0 mpi "$1" run "$2.json" --replay --steps 2 --warmup 1 --timeout 30 -o "m_$2.json" &&
    contains "run $2" "planner run: mode replay, $2.json ($1 ranks" && has "run $2" 1 "wrote m_$2.json"
  python3 - "m_$2.json" "$1" <<'PY' || { echo "FAIL $2: measured.json"; failures=$((failures + 1)); }
import json, sys
m = json.load(open(sys.argv[1]))
assert m["format"] == "planner.measured/v1" and m["mode"] == "replay", m
assert m["ranks"] == int(sys.argv[2]) and len(m["peak_memory_bytes"]) == m["ranks"]
assert len(m["step_times_s"]) == 2 and all(t > 0 for t in m["step_times_s"])
assert set(m["components_s"]) == {"compute", "tp_comm", "pp_comm", "dp_comm", "optimizer"}
assert m["versions"]["mpi"].startswith("Open MPI") and m["versions"]["openblas"].startswith("OpenBLAS")
PY
  expect "compare $2" 0 "$bin" compare "$2.json" "m_$2.json" && contains "compare $2" "step_time"
done
expect "compare --json" 0 "$bin" compare gpt_tp2.json m_gpt_tp2.json --json && contains "compare --json" '"error_pct"'
expect "run --json" 0 mpi 2 run gpt_tp2.json --replay --steps 1 --json && contains "run --json" '"mode": "replay"'
# --trace: the last measured step of every rank beside the predicted timeline.
expect "run --trace" 0 mpi 4 run gpt_tp2_pp2.json --replay --steps 2 --warmup 0 --trace trace.json
python3 - trace.json <<'PY' || { echo "FAIL run --trace: trace.json"; failures=$((failures + 1)); }
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
spans = [e for e in ev if e["ph"] == "X"]
measured = [e for e in spans if e["pid"] >= 1000]
predicted = [e for e in spans if e["pid"] < 1000]
# 4 measured ranks, 2 predicted stages
assert sorted({e["pid"] for e in measured}) == [1000, 1001, 1002, 1003], {e["pid"] for e in measured}
assert sorted({e["pid"] for e in predicted}) == [0, 1]
names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
assert "measured rank 3 (replay)" in names, names
# every rank ran forward and backward of both micro-batches, and tp all-reduces
for pid in range(1000, 1004):
    mine = {e["name"] for e in measured if e["pid"] == pid}
    for mb in (0, 1):
        assert any(n.startswith(f"F{mb} ") for n in mine) and any(n.startswith(f"B{mb} ") for n in mine), mine
    assert any(n.startswith("tp_comm ") for n in mine), mine
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in measured if e["pid"] == pid)
PY
expect "run --trace without --replay" nonzero mpi 4 run gpt_tp2_pp2.json --trace t2.json
contains "run --trace without --replay" "only the replay measures: add --replay"
expect "run --trace exists" nonzero mpi 4 run gpt_tp2_pp2.json --replay --steps 1 --trace trace.json
contains "run --trace exists" "trace.json"

# Errors: exit 2 with one line.
expect "wrong rank count" nonzero mpi 4 run gpt_tp2.json --replay
has "wrong rank count" 1 "planner run: error: gpt_tp2.json: the plan has 2 devices (cluster.devices) but 4 ranks were started; run it with mpirun -n 2"
echo '{"format": "planner.plan/v1"' > bad.json
expect "bad plan" nonzero mpi 2 run bad.json --replay
contains "bad plan" "planner run: error: bad.json: line 2, column 1: syntax error"
expect "exists without --force" nonzero mpi 2 run gpt_tp2.json --replay -o m_gpt_tp2.json
has "exists without --force" 1 "planner run: error: m_gpt_tp2.json: file exists; pass --force to replace it"
expect "--force replaces" 0 mpi 2 run gpt_tp2.json --replay --steps 1 -o m_gpt_tp2.json --force
expect "no --replay: the real mode runs tp" 0 mpi 2 run gpt_tp2.json --steps 1
contains "no --replay: the real mode runs tp" "planner run: mode real, gpt_tp2.json (2 ranks: dp=1 tp=2 pp=1 zero=0"
expect "memory limit" nonzero mpi 2 run gpt_tp2.json --replay --max-memory 0.0001
contains "memory limit" "the replay scales nothing down"
expect "compare another plan" 2 "$bin" compare gpt_pp2.json m_gpt_tp2.json
contains "compare another plan" "planner compare: error: m_gpt_tp2.json: the measurement is of another plan"
expect "compare bad file" 2 "$bin" compare gpt_tp2.json bad.json
contains "compare bad file" "planner compare: error: bad.json:"

# A stalled rank: the survivors name it and the job dies. The plan is given
# by its absolute path in this test's own folder, so the leftover check
# sees this job's processes only (ctest -j runs other `planner run` tests
# with the same binary at the same time).
t0=$(date +%s)
expect "stalled rank" nonzero mpi 4 run "$work/gpt_tp2_pp2.json" --replay --steps 3 --fault stall:1:2 --timeout 5
has "stalled rank" 3 "planner run: error: rank 1 did not reach barrier #5 within 5 s (stalled or dead)"
if (( $(date +%s) - t0 > 30 )); then echo "FAIL stalled rank: took over 30 s"; failures=$((failures + 1)); fi
for _ in $(seq 50); do [[ -z $(pgrep -f "^$bin run $work/" || true) ]] && break; sleep 0.1; done
if [[ -n $(pgrep -f "^$bin run $work/" || true) ]]; then echo "FAIL stalled rank: processes left"; failures=$((failures + 1)); fi

# A rank that crashes mid-step: it names itself, the job dies within the
# timeout, every rank exits non-zero, nothing is left.
t0=$(date +%s)
expect "crashed rank" nonzero mpi 4 run "$work/gpt_tp2_pp2.json" --replay --steps 3 --fault crash:2:2 --timeout 5
has "crashed rank" 1 "planner run: error: rank 2 crashed (signal 11: SIGSEGV)"
if (( $(date +%s) - t0 > 30 )); then echo "FAIL crashed rank: took over 30 s"; failures=$((failures + 1)); fi
for _ in $(seq 50); do [[ -z $(pgrep -f "^$bin run $work/" || true) ]] && break; sleep 0.1; done
if [[ -n $(pgrep -f "^$bin run $work/" || true) ]]; then echo "FAIL crashed rank: processes left"; failures=$((failures + 1)); fi
exit $(( failures > 0 ))
