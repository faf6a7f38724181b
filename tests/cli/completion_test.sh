#!/usr/bin/env bash
# `planner completion bash` sourced in bash: the completions of a subcommand
# name, of a subcommand's option, of a top-level flag, and files after an
# option that takes a value. Usage: completion_test.sh PLANNER_BIN
set -u
BIN=$1
source <("$BIN" completion bash) || { echo "the script does not source"; exit 1; }
complete -p planner >/dev/null || { echo "no completion registered for planner"; exit 1; }
fails=0
# expect WANT WORDS...: completing the last word yields exactly WANT.
expect() {
  local want=$1; shift
  COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=()
  _planner
  local got="${COMPREPLY[*]}"
  if [ "$got" != "$want" ]; then echo "FAIL: '$*' completes to '$got', want '$want'"; fails=$((fails + 1)); fi
}
expect "check completion calibrate compare" planner c
expect "search" planner -q se
expect "--max-regression" planner check m.onnx --max-r
expect "--devices" planner search m.onnx --dev
expect "--quiet" planner estimate --qu
expect "--version --verbose" planner --ver
# After a flag that takes a value: files, not options.
work=$(mktemp -d); touch "$work/base.plan.json"
(cd "$work" && expect "base.plan.json" planner check m.onnx --baseline base) || fails=$((fails + 1))
rm -rf "$work"
"$BIN" completion zsh >/dev/null 2>&1; [ $? -eq 2 ] || { echo "FAIL: completion zsh does not exit 2"; fails=$((fails + 1)); }
[ "$fails" -eq 0 ] && echo "completion: all passed"
[ "$fails" -eq 0 ]
