"""Known causes of the largest disagreements, by row id pattern.

Each entry explains why a row's prediction is off; nothing here changes a
prediction (the rules forbid per-row corrections). The report prints the
cause next to every row above the error threshold and every memory
disagreement; a row with no entry shows "not analysed".
"""

import re

TIME_CAUSES = [
    (r"^megatron-sc21-t2-zero3-",
     "DeepSpeed ZeRO-3 (2021) without model parallelism at 640-2240 ranks: modelled as weights fetched on "
     "demand over a single ring (one NIC share, 25 GB/s per GPU) that the compute waits for (docs/estimate.md, "
     "framework deepspeed); within 11 % on all four rows, all predicted slightly fast."),
    (r"^foundry-a100_40gb-bf16-70b-s2048-64gpu$",
     "70B on 64 A100-40GB with one micro-batch per step: measured MFU 0.36 against 0.49 for twice the per-GPU "
     "work on 128 GPUs (same table, same software); a per-step fixed cost of ~4 s the model lacks. FSDP's "
     "per-micro-batch gradient passes (bf16 reduce: 8 B per parameter, modelled) add 0.2 s; FSDP collectives "
     "hide behind the compute even at 30 % of the RoCE rate; memory at 82 % of capacity (reserved; 70 % allocated). Unexplained."),
    (r"^foundry-a100_80gb-amp_bf16-30b-s8192-8gpu$",
     "predicted reserved peak at 105 % of capacity (89 % allocated; estimate says at risk): PyTorch's caching "
     "allocator frees its cache and retries near the limit (synchronising the device); the retries' time is not "
     "modelled. The same table's May 2023 run of this "
     "layout with bf16 gradient reduction (PURE) reached 622 tokens/s/GPU against 574 here."),
    (r"^foundry-h100_80gb-amp_bf16-(13b-s2048-16gpu|70b-s2048-32gpu)$",
     "a single (or few) micro-batches per step on few GPUs: FSDP's per-micro-batch gradient passes (cat, "
     "cast to fp32, pre-divide: 18 B per parameter) are modelled and took these rows from -21.8 / -15.0 % to "
     "-11.7 / -6.1 %; the rest (per-step FSDP host work, the last layers' reduce-scatter) is not."),
    (r"^megatron-bridge-25\.11-Qwen3-30B-A3B-16gpu-h100$",
     "MoE layer work the graph does not price: 128 experts of width 768 at hidden 2048, measured at 121 TFLOP/s "
     "per GPU (12 % of the fp8 dense peak). The router's top-k, the token permutation and unpermutation, and "
     "the alltoall dispatcher's host synchronisation every MoE layer (the per-expert token counts go to the "
     "host) are small kernels and host work; NVIDIA's MoE guide (Megatron-Bridge docs, 'The Three Walls') names "
     "'small expert GEMMs + host overhead' as the compute-efficiency wall. With the layout of the repository's "
     "recipe a week later (micro-batch 1, vp 12; scripts/performance/configs/qwen3/workload_base_configs.py at "
     "21397b5c2), which fits, the prediction is 13.9 s (-44 %). The same software on the same hardware ran "
     "1.77x faster three months later: the archive's 26.02 row (pp2 vp12 ep8, micro-batch 1, GBS 1024) has "
     "5113 tokens/s/GPU, its 26.02.01 row with the same columns 9058, after the H100 configs moved from the "
     "alltoall dispatcher to the flex dispatcher with HybridEP (4a6450755, 2026-02-23; "
     "docs/performance-summary-archive.md). The prediction here, 10,325 tokens/s/GPU, prices a dispatcher of "
     "the later kind. Not modelled: no sourced per-op magnitude of the alltoall dispatcher's host work."),
    (r"^dle-resnet50-.*-8gpu$",
     "ResNet-50 on 8 GPUs: the source's scaling efficiency (0.84 DGX A100 AMP, 0.87 DGX-1 AMP, 0.97 FP32) "
     "loses more per step than the overlapped DDP all-reduce the planner models (the fastest runs lose "
     "most: the DALI input pipeline, not modelled); the 1-GPU rows are within 6 %."),
    (r"^dle-resnet50-",
     "ResNet-50: two-pass BatchNorm, Winograd for fp32 3x3 convolutions and cuDNN's NCHW transposes for "
     "tensor-core convolutions are modelled (docs/estimate.md); the rest is cuDNN kernel choice."),
]

MEMORY_CAUSES = [
    (r"^megatron-bridge-25\.11-GPT-OSS-120B-64gpu-h100$",
     "estimated with the H100 recipe's recompute of the norms and the experts' activation (--recompute-modules "
     "layernorm,moe_act), the first of 4 pipeline stages still holds 4 micro-batches of 9 MoE layers at the "
     "table's micro-batch 4: 78.8 GiB of activations, 134 GiB allocated. The recipe itself runs micro-batch 1 "
     "(Megatron-Bridge scripts/performance/configs/gpt_oss/workload_base_configs.py at cb62f8620, 2025-11-21: "
     "BASE_GPT_OSS_120B_CONFIG micro_batch_size=1), at which planner predicts 81.8 GiB reserved, 69.9 GiB "
     "allocated (at risk). Which micro-batch the table ran is not resolved."),
    (r"^megatron-bridge-25\.11-Qwen3-30B-A3B-16gpu-h100$",
     "the table's layout (micro-batch 2, vp 24) keeps 48 one-layer chunks of 2 micro-batches in flight (44 GiB "
     "of activations); the repository's H100 fp8 recipe a week later (scripts/performance/configs/qwen3/"
     "workload_base_configs.py at 21397b5c2, 2025-11-22) runs micro-batch 1, vp 12, which planner predicts "
     "fits (74 GiB reserved). Which layout the table ran is not resolved."),
    (r"^bloom-search-02-28-h14336-l82-a128-tp4-pp12-dp8-mbs2-gbs2048-L957$",
     "out of memory in the run, predicted to fit at the same peak as rows that trained: its fullest stage "
     "(embedding + 6 layers of h14336 = 4.60 B parameters at tp4, 12 micro-batches of full-recompute inputs) "
     "holds within 1 % of the bytes of L950 (embedding + 5 layers = 3.98 B parameters, micro-batch 4: "
     "measured 73 GB, trained) and of L939 (4.55 B, measured 67 GB, trained) under any per-parameter and "
     "per-activation accounting; no physical memory model separates them. The source reports one snapshot "
     "per configuration (nvidia-smi on the first node), so the OOM may come from a transient the table does "
     "not show."),
]


def cause_of(row_id, kind="time"):
    """The known cause of a row's time error (kind "time") or memory disagreement (kind "memory")."""
    for pattern, text in (TIME_CAUSES if kind == "time" else MEMORY_CAUSES):
        if re.search(pattern, row_id):
            return text
    return None
