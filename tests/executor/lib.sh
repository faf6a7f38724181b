# Helpers shared by the executor's shell tests (sourced; they count
# failures in the caller's `failures` and read the command's output from
# out.txt in the current folder).

expect() {  # name want_rc command... ; output in out.txt
  local name=$1 want=$2
  shift 2
  "$@" >out.txt 2>&1
  local rc=$?
  if [[ $rc != "$want" ]]; then
    echo "FAIL $name: exit $rc (want $want)"; cat out.txt; failures=$((failures + 1)); return 1
  fi
  echo "ok   $name (exit $rc)"
}
contains() {  # name text: out.txt contains text
  if ! grep -qF -- "$2" out.txt; then echo "FAIL $1: no '$2'"; cat out.txt; failures=$((failures + 1)); fi
}
