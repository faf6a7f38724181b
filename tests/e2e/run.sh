#!/usr/bin/env bash
# Golden end-to-end CLI tests. Each tests/e2e/<case>/ holds:
#   cmd       a shell script run in an empty folder; `planner` runs the binary
#             under test and $SRC is the repository root
#   expected  stdout, then a line "exit: N", then stderr
# Run from the repository root with PLANNER_BIN set; CASE arguments run only
# those cases (ctest registers each case as its own test, e2e/<case>, so a
# slow sanitizer build runs them side by side). Regenerate every reference
# with:  UPDATE_GOLDEN=1 PLANNER_BIN=build/default/planner bash tests/e2e/run.sh
set -u
SRC=$(pwd)
BIN=$(realpath "${PLANNER_BIN:?set PLANNER_BIN to the planner binary}")
pass=0; fail=0
dirs=()
if [ $# -gt 0 ]; then
  for c in "$@"; do
    [ -f "tests/e2e/$c/cmd" ] || { echo "e2e: no case '$c' (tests/e2e/$c/cmd)"; exit 2; }
    dirs+=("tests/e2e/$c/")
  done
else
  dirs=(tests/e2e/*/)
fi
for dir in "${dirs[@]}"; do
  [ -f "$dir/cmd" ] || continue
  name=$(basename "$dir")
  work=$(mktemp -d)
  (cd "$work" && planner() { "$BIN" "$@"; } && . "$SRC/$dir/cmd") >"$work/.stdout" 2>"$work/.stderr"
  echo "exit: $?" >"$work/.code"
  actual=$(cat "$work/.stdout" "$work/.code" "$work/.stderr" | sed "s|$SRC|\$SRC|g; s|$work|\$WORK|g")
  if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then
    printf '%s\n' "$actual" >"$dir/expected"
    echo "updated $name"; pass=$((pass+1))
  elif [ "$actual" == "$(cat "$dir/expected")" ]; then
    pass=$((pass+1))
  else
    echo "FAIL $name"; diff <(printf '%s\n' "$actual") "$dir/expected" | head -40
    fail=$((fail+1))
  fi
  rm -rf "$work"
done
echo "e2e: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
