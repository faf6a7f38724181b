#!/usr/bin/env bash
# Every subcommand `planner --help` lists has `--help` exiting 0 and ending in
# an example that runs that subcommand. Usage: help_test.sh PLANNER_BIN
set -u
BIN=$1
cmds=$("$BIN" --help | awk '/^Subcommands:/ {on = 1; next} on && /^  [a-z]/ {print $1}')
[ -n "$cmds" ] || { echo "FAIL: no subcommands listed by planner --help"; exit 1; }
fails=0; n=0
for c in $cmds; do
  n=$((n + 1))
  out=$("$BIN" "$c" --help) || { echo "FAIL: planner $c --help exits $?"; fails=$((fails + 1)); continue; }
  example=$(printf '%s\n' "$out" | awk '/^Example:/ {getline; print; exit}')
  case "$example" in
    *"planner $c "*) ;;
    *) echo "FAIL: planner $c --help has no example running it (got '$example')"; fails=$((fails + 1)) ;;
  esac
done
echo "help: $n subcommands, $fails failed"
[ "$fails" -eq 0 ]
