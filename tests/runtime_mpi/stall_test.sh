#!/usr/bin/env bash
# The stalled-rank and crashed-rank tests of the MPI communicator
# (docs/executor.md). Usage: stall_test.sh MPIEXEC MPI_FAULT_BIN
# For each case: mpirun exits as expected within 20 s wall, the project's
# one-line error naming rank 1 appears (once per surviving rank for a stall),
# and no process of the job is left behind (no stopped orphan).
set -u
mpiexec=$1
bin=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
failures=0

# Processes of the job still alive: their command line starts with $bin.
leftovers() { pgrep -f "^$bin " || true; }

check_case() {  # name mode ranks want_rc(0|nonzero) then pairs: expected_line count
  local name=$1 mode=$2 n=$3 want_rc=$4
  shift 4
  local t0 t1 rc wall got left line count seen=""
  t0=$(date +%s%N)
  timeout -s KILL 60 "$mpiexec" --oversubscribe --mca btl self,vader -n "$n" "$bin" "$mode" 3 \
    >"$out/stdout" 2>"$out/stderr"
  rc=$?
  t1=$(date +%s%N)
  wall=$(( (t1 - t0) / 1000000 ))
  local ok=1
  if [[ $want_rc == 0 && $rc != 0 ]] || [[ $want_rc != 0 && $rc == 0 ]]; then
    echo "FAIL $name: mpirun exited $rc (want $want_rc)"; ok=0
  fi
  if (( wall > 20000 )); then echo "FAIL $name: took ${wall} ms (> 20 s)"; ok=0; fi
  while (( $# >= 2 )); do
    line=$1 count=$2
    shift 2
    got=$(cat "$out/stderr" "$out/stdout" | grep -cxF -- "$line")
    if [[ $got != "$count" ]]; then
      echo "FAIL $name: '$line' printed $got times (want $count)"; ok=0
    fi
    seen+=" [x$got] '$line'"
  done
  # mpirun has returned; its ranks must be gone within a few seconds.
  for _ in $(seq 50); do [[ -z $(leftovers) ]] && break; sleep 0.1; done
  left=$(leftovers)
  if [[ -n $left ]]; then
    echo "FAIL $name: processes left behind:"; ps -o pid,stat,args -p "$(echo $left | tr ' ' ,)"
    for p in $left; do kill -CONT "$p"; kill -KILL "$p"; done  # ours, by id
    ok=0
  fi
  if (( ok )); then
    echo "ok   $name: exit $rc in ${wall} ms, nothing left;$seen"
  else
    failures=$((failures + 1))
    echo "--- stdout"; cat "$out/stdout"; echo "--- stderr"; cat "$out/stderr"
  fi
}

check_case "healthy job" none 4 0 "rank 0: done" 1
check_case "stopped rank (4 ranks)" stall 4 nonzero \
  "planner run: error: rank 1 did not reach all_reduce #2 within 3 s (stalled or dead)" 3
check_case "stopped rank (2 ranks)" stall 2 nonzero \
  "planner run: error: rank 1 did not reach all_reduce #2 within 3 s (stalled or dead)" 1
# A stall inside a dp group: rank 1 (its dp peer) names rank 3 on the group;
# ranks 0 and 2, already in the next world collective, name rank 3 and say
# where rank 1 is.
check_case "stopped rank in a dp group" stall-dp 4 nonzero \
  "planner run: error: rank 3 did not reach all_reduce #1 on split #1 color 1 within 3 s (stalled or dead)" 1 \
  "planner run: error: rank 3 did not reach all_reduce #2 within 3 s (stalled or dead); rank 1 did not reach it either (alive in all_reduce #1 on split #1 color 1)" 2
# A receive that never matches names the silent sender and where it is.
check_case "missing message" p2p 2 nonzero \
  "planner run: error: recv from rank 1 (tag 99): rank 1 did not send within 3 s (alive in barrier #1)" 1
check_case "aborted rank" crash 4 nonzero \
  "planner run: error: rank 1 crashed (signal 6: SIGABRT)" 1
check_case "segfaulted rank" segv 4 nonzero \
  "planner run: error: rank 1 crashed (signal 11: SIGSEGV)" 1
exit $(( failures > 0 ))
