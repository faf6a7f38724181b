#!/usr/bin/env bash
# `mpirun planner run` in the real mode (no --replay) with --check, end to
# end (docs/executor.md, "Real mode and --check").
# Usage: real_test.sh PLANNER_BIN MPIEXEC
# Models: an mlp (4 Gemm layers, width 32) and a gpt (4 layers, hidden 32,
# 2 heads, sequence 8, vocabulary 64), both at micro-batch 2; plans forced
# with `planner estimate`. --check compares 3 steps with the interpreter on
# rank 0 (relative error <= 1e-5 on the loss, every gradient and weight).
set -u
bin=$1
mpiexec=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export OPENBLAS_NUM_THREADS=1
failures=0
mpi() { local n=$1; shift; timeout -s KILL 120 "$mpiexec" --oversubscribe --mca btl self,vader -n "$n" "$bin" "$@"; }

. "$here/lib.sh"  # expect, contains
count() {  # name n regex: lines matching regex
  local got
  got=$(grep -cE -- "$3" out.txt)
  if [[ $got != "$2" ]]; then echo "FAIL $1: $got lines match '$3' (want $2)"; cat out.txt; failures=$((failures + 1)); fi
}

"$bin" model mlp --layers 4 --width 32 --batch 2 -o mlp.onnx >/dev/null || exit 1
"$bin" model gpt --layers 4 --hidden 32 --heads 2 --seq 8 --vocab 64 --batch 2 -o gpt.onnx >/dev/null || exit 1
est() { local m=$1 o=$2; shift 2; "$bin" estimate "$m.onnx" --profile a100-sxm4-80gb --micro-batch 2 "$@" -o "$o.json" >/dev/null || exit 1; }
# global batch = micro-batch 2 x dp x micro-batches
est mlp mlp_dp2 --devices 2 --global-batch 8
est mlp mlp_dp2_z1 --devices 2 --global-batch 8 --zero 1
est mlp mlp_dp2_z2 --devices 2 --global-batch 8 --zero 2
est mlp mlp_dp2_z3 --devices 2 --global-batch 8 --zero 3
est mlp mlp_pp2 --devices 2 --pp 2 --global-batch 8
est mlp mlp_pp2_gpipe --devices 2 --pp 2 --global-batch 8 --schedule gpipe
est mlp mlp_dp4_z3 --devices 4 --global-batch 8 --zero 3
est mlp mlp_dp2_pp2_z1 --devices 4 --pp 2 --global-batch 8 --zero 1
est gpt gpt_dp2 --devices 2 --global-batch 8
est gpt gpt_dp2_z3 --devices 2 --global-batch 8 --zero 3
est gpt gpt_dp2_do --devices 2 --global-batch 8 --distributed-optimizer
est gpt gpt_pp2 --devices 2 --pp 2 --global-batch 8
est gpt gpt_pp2_gpipe --devices 2 --pp 2 --global-batch 8 --schedule gpipe
est gpt gpt_pp2_vp2 --devices 2 --pp 2 --vp 2 --schedule interleaved --global-batch 8
est gpt gpt_dp2_pp2_z2 --devices 4 --pp 2 --global-batch 8 --zero 2 --schedule gpipe
est gpt gpt_dp2_pp2_z3 --devices 4 --pp 2 --global-batch 8 --zero 3
est gpt gpt_tp2 --devices 2 --tp 2 --global-batch 4
# A tied LM head (gpt --tie-embeddings): the token embedding read on the
# first and the last pipeline rank, each keeping a copy whose gradients are
# summed over the pipeline before the data-parallel sync.
"$bin" model gpt --layers 4 --hidden 32 --heads 2 --seq 8 --vocab 64 --batch 2 --tie-embeddings -o gptt.onnx \
  >/dev/null || exit 1
est gptt gptt_dp2 --devices 2 --global-batch 8
est gptt gptt_pp2 --devices 2 --pp 2 --global-batch 8
est gptt gptt_pp2_vp2 --devices 2 --pp 2 --vp 2 --schedule interleaved --global-batch 8
est gptt gptt_dp2_pp2_z1 --devices 4 --pp 2 --global-batch 8 --zero 1
# Tensor parallelism: Megatron's column/row pairs and head-split attention
# (megatron.hints), the mlp's Gemms column-parallel with all-gathers between
# them; a hidden-split token embedding (tp:h) with a column-parallel head
# all-gathered before the loss; the embedding, head and loss all
# vocabulary-parallel (tp:v, tp:n, tp:c). Every plan trains with the default
# optimizer, AdamW, as users run it: --check compares each step's gradients
# from the run's own weights and the update of the reference optimizer on the
# run's gradients (docs/executor.md), so Adam's m / sqrt(v) does not turn a
# gradient's rounding noise into a failure; SGD keeps two cases of its own.
printf 'layers.*/fc/Gemm tp:n\n' > mlp_tp.hints
meg=$here/data/megatron.hints
{ cat "$meg"; echo "lm_head/MatMul tp:n"; echo "embed/tokens/Gather tp:h"; } > gpt_tp_head.hints
{ cat "$meg"; echo "embed/tokens/Gather tp:v"; echo "lm_head/MatMul tp:n"; echo "loss/logits/Reshape tp:g2"
  echo "loss/SoftmaxCrossEntropyLoss tp:c"; } > gpt_tp_vocab.hints
est mlp mlp_tp2 --devices 2 --tp 2 --global-batch 8 --hints mlp_tp.hints
est gpt gpt_tp2_meg --devices 2 --tp 2 --global-batch 8 --hints "$meg"
est gpt gpt_tp2_head --devices 2 --tp 2 --global-batch 8 --hints gpt_tp_head.hints
est gpt gpt_tp2_dp2 --devices 4 --tp 2 --global-batch 8 --hints "$meg"
est gpt gpt_tp2_pp2 --devices 4 --tp 2 --pp 2 --global-batch 8 --hints "$meg"
est gpt gpt_tp2_pp2_gpipe --devices 4 --tp 2 --pp 2 --global-batch 8 --hints "$meg" --schedule gpipe
est gpt gpt_tp2_dp2_z1 --devices 4 --tp 2 --global-batch 8 --hints "$meg" --zero 1
est mlp mlp_tp2_dp2_do --devices 4 --tp 2 --global-batch 8 --hints mlp_tp.hints --distributed-optimizer
est gpt gpt_tp2_vocab --devices 2 --tp 2 --global-batch 8 --hints gpt_tp_vocab.hints
# The tied embedding vocabulary-parallel on both of its pipeline ranks.
est gptt gptt_tp2_pp2_vocab --devices 4 --tp 2 --pp 2 --global-batch 8 --hints gpt_tp_vocab.hints
printf '%s\n' "layers.*/attn/q/MatMul tp:n" "layers.*/attn/k/MatMul tp:n" "layers.*/attn/v/MatMul tp:n" \
  "layers.*/attn/o/MatMul tp:k" "layers.*/mlp/gate/MatMul tp:n" "layers.*/mlp/up/MatMul tp:n" \
  "layers.*/mlp/down/MatMul tp:k" > llama_tp.hints
est gpt gpt_tp2_sp --devices 2 --tp 2 --global-batch 8 --hints "$meg" --sp
est gpt gpt_tp2_pp2_sp --devices 4 --tp 2 --pp 2 --global-batch 8 --hints gpt_tp_vocab.hints --sp
est gpt gpt_tp2_pp2_vp2_sp --devices 4 --tp 2 --pp 2 --vp 2 --schedule interleaved --global-batch 8 \
  --hints gpt_tp_vocab.hints --sp
# A strategy no kernel runs on shares: layer 0's ln1 split along the hidden
# axis it normalises (the plan edited by hand).
python3 - <<'PY' || exit 1
import json
p = json.load(open("gpt_tp2_meg.json"))
for s in p["layout"]["strategies"]:
    if s["unit"] == "layers.0/ln1/LayerNormalization":
        s["inputs"][0] = s["outputs"][0] = "[-,-,tp]"
json.dump(p, open("gpt_tp2_ln.json", "w"), indent=1)
PY
"$bin" model llama --layers 4 --hidden 32 --heads 2 --seq 8 --vocab 64 --batch 2 -o llama.onnx >/dev/null || exit 1
"$bin" model bert --layers 4 --hidden 32 --heads 2 --seq 8 --vocab 64 --batch 2 -o bert.onnx >/dev/null || exit 1
est llama llama_pp2 --devices 2 --pp 2 --global-batch 8
est bert bert_dp2_z1 --devices 2 --global-batch 8 --zero 1
# llama (RMSNorm, RoPE's slices and concat on head-split q and k, SwiGLU):
# Megatron's pairs, with and without sequence parallelism.
est llama llama_tp2 --devices 2 --tp 2 --global-batch 8 --hints llama_tp.hints
est llama llama_tp2_sp --devices 2 --tp 2 --global-batch 8 --hints llama_tp.hints --sp
# Recomputation (training.recompute): full recomputes every op of a layer,
# selective the attention core, as the cost model prices them
# (cost::recomputed); with tp the recomputed forward repeats its collectives.
est gpt gpt_pp2_none --devices 2 --pp 2 --global-batch 8
est gpt gpt_pp2_full --devices 2 --pp 2 --global-batch 8 --recompute full
est gpt gpt_pp2_sel --devices 2 --pp 2 --global-batch 8 --recompute selective
est gpt gpt_dp2_z3_full --devices 2 --global-batch 8 --zero 3 --recompute full
est gpt gpt_pp2_vp2_full --devices 2 --pp 2 --vp 2 --schedule interleaved --global-batch 8 --recompute full
est gpt gpt_dp2_pp2_full --devices 4 --pp 2 --global-batch 8 --recompute full --schedule gpipe
est gpt gpt_tp2_meg_full --devices 2 --tp 2 --global-batch 8 --hints "$meg" --recompute full
est gpt gpt_tp2_sp_sel --devices 2 --tp 2 --global-batch 8 --hints "$meg" --sp --recompute selective
est gpt gpt_tp2_pp2_sel --devices 4 --tp 2 --pp 2 --global-batch 8 --hints "$meg" --recompute selective
est llama llama_tp2_full --devices 2 --tp 2 --global-batch 8 --hints llama_tp.hints --recompute full
# Megatron's recompute modules (--recompute-modules): each norm's output is
# dropped after its last reader's forward and made again before that reader's
# backward (layernorm), with and without the attention core. BERT's post-LN
# norms feed the next attention and the residual (a norm read by GEMMs alone,
# as in the llama, is fused into them and not recomputed).
est bert bert_pp2_sel --devices 2 --pp 2 --global-batch 8 --recompute selective
est bert bert_pp2_ln --devices 2 --pp 2 --global-batch 8 --recompute selective --recompute-modules core_attn,layernorm
est bert bert_dp2_ln --devices 2 --global-batch 8 --recompute selective --recompute-modules layernorm
# RMSNorm's mean over the hidden dim split over tp (--tp-any): a partial
# sum (each rank's mean of its half / tp), reduce-scattered to the batch
# split its reader takes (refused by the real mode until 2026-12).
echo "layers.*/attn_norm/ReduceMean ((1,1,2))" > llama_mean.hints
est llama llama_tpany_mean --devices 2 --tp 2 --tp-any --global-batch 8 --hints llama_mean.hints
python3 -c "
import json
s = {u['unit']: u for u in json.load(open('llama_tpany_mean.json'))['layout']['strategies']}
u = s['layers.0/attn_norm/ReduceMean']
assert u['inputs'] == ['[-,-,tp]'] and u['outputs'] == ['[-,-,-]partial(tp)'], u" || exit 1
# Tensor parallelism of degree 4: a gpt of 4 heads (d 8) and llamas with
# grouped-query attention (8 heads on 4 kv heads, 4 heads on 2: the kv heads
# split over tp, repeated by Expand on each rank's share), alone and with dp
# or pp on 8 ranks.
"$bin" model gpt --layers 4 --hidden 32 --heads 4 --seq 8 --vocab 64 --batch 2 -o gpt4h.onnx >/dev/null || exit 1
"$bin" model llama --layers 4 --hidden 32 --heads 8 --kv-heads 4 --seq 8 --vocab 64 --batch 2 -o llama_kv4.onnx \
  >/dev/null || exit 1
"$bin" model llama --layers 4 --hidden 32 --heads 4 --kv-heads 2 --seq 8 --vocab 64 --batch 2 -o llama_kv2.onnx \
  >/dev/null || exit 1
est gpt4h gpt_tp4_meg --devices 4 --tp 4 --global-batch 8 --hints "$meg"
est gpt4h gpt_tp4_vocab_sp --devices 4 --tp 4 --global-batch 8 --hints gpt_tp_vocab.hints --sp
est llama_kv4 llama_kv4_tp4 --devices 4 --tp 4 --global-batch 8 --hints llama_tp.hints
est llama_kv2 llama_kv2_tp2 --devices 2 --tp 2 --global-batch 8 --hints llama_tp.hints
est gpt4h gpt_tp4_dp2_full --devices 8 --tp 4 --global-batch 8 --hints "$meg" --recompute full
est gpt4h gpt_tp4_pp2_sel --devices 8 --tp 4 --pp 2 --global-batch 8 --hints gpt_tp_vocab.hints --sp \
  --recompute selective

# The tp axis splitting the batch (layout.tp_splits_batch, --tp-any): Wide &
# Deep (64-row deep table of dim 8 and a 64-row wide table of dim 1, 4 ids
# and 5 dense features a sample, micro-batch 4) with the wide table
# row-split (its partial lookups reduce-scattered to the batch split by the
# field sum) and the deep table row-split (tp:v, a masked lookup
# all-reduced) or column-split (tp:h, all-gathered before the Reshape), the
# dense part and the loss batch-split (tp:m, tp:d0, tp:n: each rank's mean
# over its rows / tp, all-reduced); the layout estimate picks for tp 2 (a
# row-parallel fc2 whose bias tp rank 0 adds), with dp 2 and tp 4.
"$bin" model widedeep --rows 64 --dim 8 --fields 4 --dense-features 5 --batch 4 -o wd.onnx >/dev/null || exit 1
for t in v h; do
  printf '%s\n' "wide/embedding/Gather tp:v" "wide/sum/ReduceSum tp:d0" "deep/embedding/Gather tp:$t" \
    "deep/embedding/Reshape replicated" "deep/features/Concat tp:d0" "*/Gemm tp:m" "*/Relu tp:d0" "logit/* tp:d0" \
    "loss/SoftmaxCrossEntropyLoss tp:n" > "wd_$t.hints"
done
estw() { local o=$1; shift; "$bin" estimate wd.onnx --profile a100-sxm4-80gb --micro-batch 4 --tp-any "$@" -o "$o.json" \
  >/dev/null || exit 1; }
estw wd_row --devices 2 --tp 2 --global-batch 8 --hints wd_v.hints
estw wd_col --devices 2 --tp 2 --global-batch 8 --hints wd_h.hints
estw wd_col_dp2 --devices 4 --tp 2 --global-batch 16 --hints wd_h.hints
estw wd_row_tp4 --devices 4 --tp 4 --global-batch 8 --hints wd_v.hints
estw wd_tp2 --devices 2 --tp 2 --global-batch 8
python3 - <<'PY' || exit 1
import json
for name, gather in [("wd_row", "[tp,-]"), ("wd_col", "[-,tp]"), ("wd_tp2", None)]:
    p = json.load(open(f"{name}.json"))
    assert p["layout"]["tp_splits_batch"] and p["layout"]["tp"] == 2, name
    s = {u["unit"]: u for u in p["layout"]["strategies"]}
    if gather:
        assert s["deep/embedding/Gather"]["inputs"][0] == gather, s["deep/embedding/Gather"]
        assert s["wide/embedding/Gather"]["inputs"][0] == "[tp,-]", s["wide/embedding/Gather"]
        assert s["wide/sum/ReduceSum"]["inputs"][0] == "[tp,-,-]", s["wide/sum/ReduceSum"]
        assert s["loss/SoftmaxCrossEntropyLoss"]["inputs"] == ["[tp,-]", "[tp]"], name
    else:
        assert s["deep/fc2/Gemm"]["assignment"] == "tp:k", s["deep/fc2/Gemm"]
# A batch-split loss reading its labels whole (hand-edited): refused.
p = json.load(open("wd_row.json"))
for u in p["layout"]["strategies"]:
    if u["unit"] == "loss/SoftmaxCrossEntropyLoss":
        u["inputs"][1] = "[-]"
json.dump(p, open("wd_row_labels.json", "w"), indent=1)
PY

# Context parallelism (cp; tp = 1): the sequence split from the token ids
# on, K^T and V all-gathered for the attention core, the logits gathered
# before the loss; with dp (ZeRO 1), pp, and cp 4 (sequence 8 / 4) with full
# recompute (the same 496 ops, counted once per cp group).
est gpt gpt_cp2 --devices 2 --cp 2 --global-batch 8
est llama llama_cp2 --devices 2 --cp 2 --global-batch 8
est gpt gpt_cp2_dp2_z1 --devices 4 --cp 2 --global-batch 8 --zero 1
est gpt gpt_cp2_pp2 --devices 4 --cp 2 --pp 2 --global-batch 8
est gpt gpt_cp4_full --devices 4 --cp 4 --global-batch 8 --recompute full
est gpt gpt_cp2_tp2 --devices 4 --cp 2 --tp 2 --global-batch 8
est mlp mlp_cp2 --devices 2 --cp 2 --global-batch 8
# SGD (momentum) and plain SGD keep a tp and a ZeRO-3 case.
est gpt gpt_tp2_meg_sgd --devices 2 --tp 2 --global-batch 8 --hints "$meg" --optimizer sgd
est mlp mlp_dp2_z3_sgd --devices 2 --global-batch 8 --zero 3 --optimizer sgd-plain
# First real use (issue: --check failed with Adam): a gpt with weights,
# hidden 128, written by estimate with default settings but the layout.
"$bin" model gpt --layers 2 --hidden 128 --heads 4 --seq 64 --vocab 512 --with-weights -o gptw.onnx >/dev/null || exit 1
"$bin" estimate gptw.onnx --profile a100-sxm4-80gb --devices 2 --tp 2 --pp 1 --dp 1 --micro-batch 4 --global-batch 8 \
  --precision fp32 --attention unfused -o gptw_tp2.json >/dev/null || exit 1

# Healthy runs: --check passes at each of the 3 checked steps.
for c in "2 mlp_dp2" "2 mlp_dp2_z1" "2 mlp_dp2_z2" "2 mlp_dp2_z3" "2 mlp_pp2" "2 mlp_pp2_gpipe" "4 mlp_dp4_z3" \
         "4 mlp_dp2_pp2_z1" "2 gpt_dp2" "2 gpt_dp2_z3" "2 gpt_dp2_do" "2 gpt_pp2" "2 gpt_pp2_gpipe" "2 gpt_pp2_vp2" \
         "4 gpt_dp2_pp2_z2" "4 gpt_dp2_pp2_z3" "2 llama_pp2" "2 bert_dp2_z1" "2 gpt_tp2" "2 mlp_tp2" "2 gpt_tp2_meg" \
         "2 gpt_tp2_head" "2 gpt_tp2_vocab" "4 gpt_tp2_dp2" "4 gpt_tp2_pp2" "4 gpt_tp2_pp2_gpipe" "4 gpt_tp2_dp2_z1" "4 mlp_tp2_dp2_do" "2 gpt_tp2_sp" "4 gpt_tp2_pp2_sp" "4 gpt_tp2_pp2_vp2_sp" \
         "2 llama_tp2" "2 llama_tp2_sp" "2 gpt_pp2_full" "2 gpt_pp2_sel" "2 gpt_dp2_z3_full" "2 gpt_pp2_vp2_full" \
         "4 gpt_dp2_pp2_full" "2 gpt_tp2_meg_full" "2 gpt_tp2_sp_sel" "4 gpt_tp2_pp2_sel" "2 llama_tp2_full" "2 llama_tpany_mean" \
         "2 bert_pp2_sel" "2 bert_pp2_ln" "2 bert_dp2_ln" \
         "4 gpt_tp4_meg" "4 gpt_tp4_vocab_sp" "4 llama_kv4_tp4" "2 llama_kv2_tp2" "8 gpt_tp4_dp2_full" "8 gpt_tp4_pp2_sel" \
         "2 wd_row" "2 wd_col" "4 wd_col_dp2" "4 wd_row_tp4" "2 wd_tp2" \
         "2 gpt_cp2" "2 llama_cp2" "4 gpt_cp2_dp2_z1" "4 gpt_cp2_pp2" "4 gpt_cp4_full" \
         "2 gpt_tp2_meg_sgd" "2 mlp_dp2_z3_sgd" "2 gptw_tp2" \
         "2 gptt_dp2" "2 gptt_pp2" "2 gptt_pp2_vp2" "4 gptt_dp2_pp2_z1" "4 gptt_tp2_pp2_vocab"; do
  set -- $c
  expect "check $2 on $1 ranks" 0 mpi "$1" run "$2.json" --check --steps 3 --warmup 1 --timeout 60 -o "m_$2.json" &&
    contains "$2" "planner run: mode real, $2.json ($1 ranks" &&
    count "$2" 3 '^check step [123]: loss [0-9.]+ vs reference [0-9.]+; max relative error .* <= 1e-05: ok$' &&
    count "$2" 4 '^step [1-4]'
  cp out.txt "out_$2.txt"
  python3 - "m_$2.json" "$1" "$2" <<'PY' || { echo "FAIL $2: measured.json"; failures=$((failures + 1)); }
import json, sys
m = json.load(open(sys.argv[1]))
assert m["format"] == "planner.measured/v1" and m["mode"] == "real", m
assert m["ranks"] == int(sys.argv[2]) and m["steps"] == 3 and m["warmup"] == 1
assert len(m["step_times_s"]) == 3 and all(t > 0 for t in m["step_times_s"])
assert len(m["peak_memory_bytes"]) == m["ranks"]
# Where the step went (docs/executor.md "Real mode: where the time goes"):
# every component, none negative or above the slowest step, kernels timed,
# and each parallelism the plan uses booked to its own component.
c, name = m["components_s"], sys.argv[3]
assert set(c) == {"compute", "tp_comm", "pp_comm", "dp_comm", "optimizer", "grad_accumulation", "other"}, c
assert all(0 <= v <= 1.05 * max(m["step_times_s"]) for v in c.values()), c
assert c["compute"] > 0 and c["optimizer"] > 0 and c["grad_accumulation"] > 0, c
booked = {"dp": "dp_comm", "pp": "pp_comm", "tp": "tp_comm", "cp": "tp_comm"}  # cp runs on tp's machinery
for seg in name.split("_")[1:] + (["tp2"] if name in ("wd_row", "wd_col") else []):
    if seg[:2] in booked and (seg[2:].isdigit() or seg == "tpany"):
        assert c[booked[seg[:2]]] > 0, (seg, c)
PY
done
# The recomputed work per step, summed over ranks, tp shares once; every
# plan above runs dp x micro-batches = 4 micro-batches of the gpt (b 2, s 8,
# h 32, 2 heads of d 16, ffn 128; T = b s = 16 tokens):
#   full: a layer's 31 ops (ln1; qkv MatMul, Add; Split; q, k, v Reshape and
#     Transpose (6); attention 5; Transpose, Reshape; proj MatMul, Add;
#     residual Add; ln2; fc1 MatMul, Add; GeLU Div, Erf, Add, Mul, Mul; fc2
#     MatMul, Add; residual Add) x 4 layers x 4 = 496 ops.
#     FLOPs per layer: qkv 2*16*32*96 = 98304 + bias 1536; proj 2*16*32*32 =
#     32768 + 512; fc1 2*16*32*128 = 131072 + 2048; fc2 131072 + 512;
#     attention 18176 (below); residuals 2*512; GeLU 5 ops x 2048 = 10240;
#     LayerNorm 7 x 512 = 3584 twice -> 434432; x 16 = 6950912.
#   selective: the attention pattern's 5 ops (scores MatMul 2*2*2*8*8*16 =
#     8192, scale Mul 256, mask Add 256, Softmax 5*256 = 1280, context
#     MatMul 8192 = 18176 FLOPs) x 4 layers x 4 = 80 ops, 290816 FLOPs.
#   llama full: a layer's 52 ops (RMSNorm 6; q, k, v MatMul 3; Reshape and
#     Transpose 6; RoPE on q and k 7 + 7 (2 Slice, Neg, Concat, 2 Mul, Add);
#     k Transpose; attention 5 + Transpose, Reshape; o MatMul; residual Add;
#     RMSNorm 6; gate MatMul, Sigmoid, Mul; up MatMul; Mul; down MatMul;
#     residual Add) x 4 layers x 4 = 832 ops.
for c in gpt_pp2_full gpt_dp2_z3_full gpt_pp2_vp2_full gpt_dp2_pp2_full gpt_tp2_meg_full gpt_cp4_full; do
  want="recomputed per step (full): 496 ops, 6950912 forward FLOPs"
  grep -qxF "$want" "out_$c.txt" || { echo "FAIL $c: no '$want'"; cat "out_$c.txt"; failures=$((failures + 1)); }
done
for c in gpt_pp2_sel gpt_tp2_sp_sel gpt_tp2_pp2_sel; do
  want="recomputed per step (selective): 80 ops, 290816 forward FLOPs"
  grep -qxF "$want" "out_$c.txt" || { echo "FAIL $c: no '$want'"; cat "out_$c.txt"; failures=$((failures + 1)); }
done
# The 4-head gpt (d 8): attention 8192 + 512 + 512 + 5*512 + 8192 = 19968
# FLOPs a layer, so full 434432 - 18176 + 19968 = 436224 x 16 = 6979584,
# selective 19968 x 16 = 319488; the op counts are the same.
grep -qxF "recomputed per step (full): 496 ops, 6979584 forward FLOPs" out_gpt_tp4_dp2_full.txt ||
  { echo "FAIL gpt_tp4_dp2_full: recomputed"; cat out_gpt_tp4_dp2_full.txt; failures=$((failures + 1)); }
grep -qxF "recomputed per step (selective): 80 ops, 319488 forward FLOPs" out_gpt_tp4_pp2_sel.txt ||
  { echo "FAIL gpt_tp4_pp2_sel: recomputed"; cat out_gpt_tp4_pp2_sel.txt; failures=$((failures + 1)); }
grep -qE '^recomputed per step \(full\): 832 ops, [0-9]+ forward FLOPs$' out_llama_tp2_full.txt ||
  { echo "FAIL llama_tp2_full: recomputed ops"; cat out_llama_tp2_full.txt; failures=$((failures + 1)); }
# bert's recompute modules: a LayerNorm op of 7 x 512 = 3584 FLOPs (T = 16
# tokens, h 32); 7 of a micro-batch's 8 (the last layer's second norm feeds
# the MLM head's GEMM alone: fused) x 4 micro-batches = 28 ops, 100352 FLOPs;
# with core_attn the 4 layers' attention (4 ops: no mask; 17920 FLOPs) x 4
# more: 92 ops, 387072 FLOPs.
grep -qxF "recomputed per step (selective): 28 ops, 100352 forward FLOPs" out_bert_dp2_ln.txt ||
  { echo "FAIL bert_dp2_ln: recomputed"; cat out_bert_dp2_ln.txt; failures=$((failures + 1)); }
grep -qxF "recomputed per step (selective): 92 ops, 387072 forward FLOPs" out_bert_pp2_ln.txt ||
  { echo "FAIL bert_pp2_ln: recomputed"; cat out_bert_pp2_ln.txt; failures=$((failures + 1)); }
# Without recompute nothing is counted; the activations held at peak fall
# on every rank (gpt, pp 2, 1F1B, 4 micro-batches).
expect "no recompute" 0 mpi 2 run gpt_pp2_none.json --steps 1 --warmup 0 && cp out.txt out_gpt_pp2_none.txt
count "no recompute" 0 '^recomputed'
python3 - <<'PY' || { echo "FAIL recompute holds less"; failures=$((failures + 1)); }
import re
def held(name):
    t = open(f"out_{name}.txt").read()
    return [int(x) for x in re.search(r"^peak activations held per rank \(bytes\): (.*)$", t, re.M).group(1).split(", ")]
none, full, sel = held("gpt_pp2_none"), held("gpt_pp2_full"), held("gpt_pp2_sel")
# Rank 0 holds layers 0-1 and the embedding: full keeps only the layers'
# inputs (measured 470272 -> 132352 bytes); rank 1 also holds the logits and
# the loss, which no policy recomputes.
assert all(f < n for f, n in zip(full, none)) and 3 * full[0] < none[0], (none, full)
assert all(s < n for s, n in zip(sel, none)), (none, sel)
# Dropping the norms' outputs too holds less on both pipeline ranks.
sel_l, ln_l = held("bert_pp2_sel"), held("bert_pp2_ln")
assert all(l < s for l, s in zip(ln_l, sel_l)), (sel_l, ln_l)
print(f"peak activations: none {none}, full {full}, selective {sel}")
PY
# A dropped share of a recomputed forward's collective: gpt_tp2_meg_full's
# world collectives #1-8 are micro-batch 0's forward all-reduces; its
# backward first recomputes layer 3, whose attention-projection all-reduce
# is #9. The recomputed activations are wrong, so a gradient is (the loss,
# from the first forward, is not).
expect "drop fault in a recomputed forward fails --check" 1 mpi 2 run gpt_tp2_meg_full.json --check --steps 1 \
  --warmup 0 --fault drop:1:9
contains "drop fault recompute" "planner run: error: --check failed at step 1: gradient of '"

# compare reads a real measurement: the step time is compared, the
# components (not split in the real mode) show unmeasured.
expect "compare a real run" 0 "$bin" compare gpt_dp2.json m_gpt_dp2.json && contains "compare" "mode real, 2 ranks"
# The loss falls under Adam (lr 1e-4 of the plan): step 4 below step 1.
expect "loss falls" 0 mpi 2 run gpt_pp2.json --steps 3 --warmup 1
python3 - <<'PY' || { echo "FAIL loss falls"; cat out.txt; failures=$((failures + 1)); }
import re
losses = [float(x) for x in re.findall(r"^step \d.*: loss ([0-9.]+)$", open("out.txt").read(), re.M)]
assert len(losses) == 4 and losses[3] < losses[0], losses
PY

# A rank drops its share of the first gradient all-reduce (world collective
# #1 of a pure dp plan): --check names the first tensor off, exit 1.
expect "drop fault fails --check" 1 mpi 2 run mlp_dp2.json --check --steps 2 --fault drop:1:1
contains "drop fault" "planner run: error: --check failed at step 1: gradient of '"
expect "drop fault fails --check (ZeRO-1 reduce-scatter)" 1 mpi 2 run mlp_dp2_z1.json --check --fault drop:0:1
contains "drop fault zero1" "planner run: error: --check failed at step 1: gradient of '"
# Without --check the same fault runs to the end (nothing compares).
expect "drop fault without --check" 0 mpi 2 run mlp_dp2.json --steps 1 --fault drop:1:1

# A rank drops its share of a tp collective: gpt_tp2_meg's world collectives
# #1-8 are the forward all-reduces of the 4 layers' row-parallel outputs
# (attention projection, fc2) in micro-batch 0; #9 is the first backward one
# (the partial gradient of layer 3's ln2 output, read by the column-parallel
# fc1): the loss stays right, a gradient does not.
expect "drop fault on a tp collective fails --check" 1 mpi 2 run gpt_tp2_meg.json --check --steps 2 --fault drop:1:9
contains "drop fault tp" "planner run: error: --check failed at step 1: gradient of '"

# Layouts the real mode cannot run: exit 2, one line naming what, and --replay.
expect "a split normalised axis refused" 2 mpi 2 run gpt_tp2_ln.json --check
contains "ln refused" "planner run: error: gpt_tp2_ln.json: the real mode cannot run op 'layers.0/ln1/LayerNormalization' (LayerNormalization) under tensor parallelism with strategy ((1,1,1),(1,),(1,)) (replicated): its normalised axis 2 is split"
count "ln refused" 1 "error"
grep -qF "planner run: mode real, gpt_cp2.json (2 ranks: dp=1 tp=1 pp=1 cp=2 zero=0," out_gpt_cp2.txt ||
  { echo "FAIL cp summary"; cat out_gpt_cp2.txt; failures=$((failures + 1)); }
# A dropped share of the first cp collective (world #1: layer 0's K^T
# all-gather): a gradient is off (the loss barely moves: the tiny model's
# scores are near 0 with or without those keys).
expect "drop fault on a cp all-gather fails --check" 1 mpi 2 run gpt_cp2.json --check --steps 1 --warmup 0 \
  --fault drop:1:1
contains "drop fault cp" "planner run: error: --check failed at step 1: gradient of '"
expect "cp with tp refused" 2 mpi 4 run gpt_cp2_tp2.json
contains "cp with tp refused" "the real mode cannot run context parallelism with tensor parallelism (layout.cp = 2, layout.tp = 2) yet"
expect "cp without token ids refused" 2 mpi 2 run mlp_cp2.json
contains "cp mlp refused" "planner run: error: mlp_cp2.json: the real mode runs context parallelism on token ids looked up by a Gather"
expect "a batch-split loss with whole labels refused" 2 mpi 2 run wd_row_labels.json --check
contains "labels refused" "planner run: error: wd_row_labels.json: the real mode cannot run op 'loss/SoftmaxCrossEntropyLoss' (SoftmaxCrossEntropyLoss) under tensor parallelism with strategy"
expect "--check with --replay" 2 mpi 2 run gpt_dp2.json --replay --check
contains "--check with --replay" "planner run: error: --check compares a real run with the interpreter"
expect "stall fault in the real mode" 2 mpi 2 run gpt_dp2.json --fault stall:1:1
contains "stall fault" "planner run: error: --fault: the real mode takes drop:RANK:N only (got 'stall:1:1')"
expect "exists without --force" 2 mpi 2 run gpt_dp2.json -o m_gpt_dp2.json
contains "exists without --force" "planner run: error: m_gpt_dp2.json: file exists; pass --force to replace it"
exit $(( failures > 0 ))
