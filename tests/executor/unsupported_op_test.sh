#!/usr/bin/env bash
# `planner run` on models with an op variant the CPU kernels lack
# (runtime_cpu::check_supported): the real mode refuses it before any rank
# starts, exit 2 and one line naming the op, its type and the input or
# output; --replay (which computes nothing) times the same plan, exit 0.
# Usage: unsupported_op_test.sh PLANNER_BIN
# Models (written below with tools/make_bad_inputs.py's protobuf encoder, no
# onnx package): x [2,8] -> MatMul W [8,4] -> LayerNormalization ->
# SoftmaxCrossEntropyLoss(labels [2]) -> loss, with one variant each:
#   ln_mean      LayerNormalization also writes its Mean output
#   xent_weights SoftmaxCrossEntropyLoss takes class weights (input 2)
#   xent_logprob SoftmaxCrossEntropyLoss also writes log_prob
set -u
bin=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export OPENBLAS_NUM_THREADS=1
failures=0
# One rank: run directly (an MPI singleton), so the output is planner's own lines.
one() { timeout -s KILL 60 "$bin" "$@"; }

python3 - "$here/../../tools" <<'EOF' || exit 1
import sys
sys.path.insert(0, sys.argv[1])
from make_bad_inputs import T, floats, graph, model, node, tensor, value_info

def write(name, ln_outputs=("y",), xent_inputs=("y", "labels"), xent_outputs=("loss",), extra_inits=()):
    nodes = [node("MatMul", ["x", "W"], ["h"], name="mm"),
             node("LayerNormalization", ["h", "ln.weight", "ln.bias"], list(ln_outputs), name="ln"),
             node("SoftmaxCrossEntropyLoss", list(xent_inputs), list(xent_outputs), name="xent")]
    inits = [tensor("W", [8, 4], raw=floats(32)), tensor("ln.weight", [4], raw=floats(4, 1)),
             tensor("ln.bias", [4], raw=floats(4, 2))] + list(extra_inits)
    g = graph(nodes=nodes, inputs=[value_info("x", [2, 8]), value_info("labels", [2], T.INT64)],
              outputs=[value_info("loss", [])], initializers=inits)
    with open(name + ".onnx", "wb") as f:
        f.write(model(g))

write("plain")
write("ln_mean", ln_outputs=("y", "ln.mean"))
write("xent_weights", xent_inputs=("y", "labels", "class_weights"),
      extra_inits=[tensor("class_weights", [4], raw=floats(4, 3))])
write("xent_logprob", xent_outputs=("loss", "log_prob"))
EOF

. "$here/lib.sh"  # expect, contains
only() {  # name line: out.txt is exactly this one line
  if [[ $(cat out.txt) != "$2" ]]; then
    echo "FAIL $1: want exactly '$2'"; cat out.txt; failures=$((failures + 1))
  fi
}

for m in plain ln_mean xent_weights xent_logprob; do
  "$bin" estimate "$m.onnx" --profile a100-sxm4-80gb --devices 1 --micro-batch 2 --global-batch 2 \
    -o "$m.json" >/dev/null 2>&1 || { echo "FAIL estimate $m"; exit 1; }
done

# The same graph without the variant trains (the refusals below are the variant's).
expect "plain model runs" 0 one run plain.json --steps 1 --warmup 0 --check

tail="; --replay can time this plan"
expect "LayerNormalization Mean refused" 2 one run ln_mean.json
only "LayerNormalization Mean refused" "planner run: error: ln_mean.json: the real mode cannot run op 'ln' (LayerNormalization): output 1 (Mean) is not implemented (the kernels compute output 0, Y, only)$tail"
expect "class weights refused" 2 one run xent_weights.json
only "class weights refused" "planner run: error: xent_weights.json: the real mode cannot run op 'xent' (SoftmaxCrossEntropyLoss): input 2 (class weights) is not implemented$tail"
expect "log_prob refused" 2 one run xent_logprob.json
only "log_prob refused" "planner run: error: xent_logprob.json: the real mode cannot run op 'xent' (SoftmaxCrossEntropyLoss): output 1 (log_prob) is not implemented (the kernels compute the loss only)$tail"
# --replay computes nothing: it times the plan.
expect "--replay times it" 0 one run ln_mean.json --replay --steps 1 --warmup 0
exit $(( failures > 0 ))
