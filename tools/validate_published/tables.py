"""Fixed knowledge the harness uses to map published rows to planner commands.

Every entry names where it comes from; docs/validation-published.md prints
these tables (report.py), so the rules the doc shows are the rules the code
uses. Nothing here is tuned per row: entries are keyed on public names,
hardware and source groups, never on a row id.
"""

# Dates of software behaviour (fractional years), each with its source.
FLASH_ATTENTION_FROM = (2022.42, "FlashAttention (Dao et al., arXiv 2205.14135, 27 May 2022)")
MEGATRON_OVERLAP_FROM = (2023.58, "Megatron-LM commit 2d5220a (2023-08-16) added --overlap-grad-reduce; "
                                  "before it Megatron-LM reduced gradients after the pipeline flush")

# Software a source names: (regex on the lower-case source fields and notes,
# stack (key of the tables below) or None, --framework, attention when the
# source names no kernel or None, since (date, why) or None, why). First
# entry that matches and whose `since` the source's date does not precede
# wins (era.py). "megatron-by-date": megatron-legacy before
# MEGATRON_OVERLAP_FROM, megatron after. Keyed on public software names,
# never on a source_group.
SOFTWARE_NAMES = [
    (r"megatron[- ]bridge", "megatron-bridge", "megatron", "flash", None,
     "Megatron-Bridge (NeMo 25.x): Megatron-Core models with Transformer Engine fused attention"),
    (r"megatron[- ]?core|\bmcore\b|\bcore_r\d", "megatron-core", "megatron", "flash", MEGATRON_OVERLAP_FROM,
     "Megatron-Core: Transformer Engine fused attention, overlapped gradient reduction"),
    (r"\bnemo\b", "nemo", "megatron", "flash", MEGATRON_OVERLAP_FROM,
     "NeMo on Megatron-Core and Transformer Engine (fused attention)"),
    (r"deepspeed|\bzero-?3\b", None, "deepspeed", None, None,
     "the source names DeepSpeed / ZeRO-3 (Megatron-DeepSpeed included): reduction after the flush"),
    (r"llm-foundry|mosaicml|\bcomposer\b", "llm-foundry", "fsdp", "flash", None,
     "llm-foundry / Composer: PyTorch FSDP; MPT yamls set attn_impl flash (or triton, a FlashAttention kernel)"),
    (r"\bfsdp\b|fully[ _]?sharded", None, "fsdp", None, None, "the source names FSDP"),
    (r"megatron", None, "megatron-by-date", None, None, "the source names Megatron"),
    (r"distributeddataparallel|\bddp\b", None, "ddp", None, None, "the source names PyTorch DDP"),
]

# Defaults of a software stack (era.py, SOFTWARE_NAMES), applied only to
# fields the row leaves null (each use is noted): distributed optimizer when
# neither it nor a ZeRO stage is given; sequence parallelism when tp > 1.
STACK_CONVENTIONS = [
    ("nemo", True, True,
     "NeMo-Framework-Launcher conf/training yamls (e.g. llama/llama2_70b.yaml): optim distributed_fused_adam, "
     "sequence_parallel true"),
    ("megatron-bridge", True, True,
     "NeMo 2 / Megatron-Bridge recipes: OptimizerConfig(use_distributed_optimizer=True), sequence parallel "
     "with tp > 1"),
]

# Stacks whose performance configs reduce (and so hold) gradients in bf16
# rather than Megatron's fp32 default: --grad-reduce-bytes 2.
GRAD_REDUCE_BF16_STACKS = {
    "nemo": "NeMo-Framework-Launcher H100 performance scripts (examples/training/*/h100/*_fp8*.sh: "
            "+training.model.optim.grad_sync_dtype=bf16; conf/training/nemotron/nemotron_340b.yaml: "
            "optim.grad_sync_dtype bf16)",
    "megatron-bridge": "Megatron-Bridge performance configs, every model family (scripts/performance/configs/*/"
                       "*_llm_pretrain.py: cfg.mixed_precision.grad_reduce_in_fp32 = False, "
                       "cfg.ddp.grad_reduce_in_fp32 = False; at 5a7e66e21, 2025-11, and 5c86b2b1d, 2026-02), "
                       "overriding MixedPrecisionConfig's grad_reduce_in_fp32=True",
}

# Stacks whose optimizer keeps only the low 16 bits of the fp32 master
# weights of bf16 parameters (--master-weights remainder) on bf16/fp8 rows.
MASTER_REMAINDER_STACKS = {
    "nemo": "NeMo 24.07 (r2.0.0rc1) megatron_base_model.py setup_optimization: distributed_fused_adam with "
            "fp32 optimizer dtype on a bf16 (megatron_amp_O2) model sets store_params False, "
            "store_param_remainders True (Apex DistributedFusedAdam)",
}

# Settings of one model's public recipe in one software stack, applied to
# the row's null fields only (recompute, and with it its modules) or as flags
# the row has no field for (optimizer state dtype, master weights, pipeline
# split). Keyed on (stack, KNOWN_CONFIGS key).
RECIPE_SETTINGS = [
    ("nemo", "NEMOTRON340B",
     dict(recompute="selective", optimizer_state_dtype="bf16", master_weights="none"),
     "NeMo-Framework-Launcher 24.07 conf/training/nemotron/nemotron_340b.yaml: activations_checkpoint_granularity "
     "selective; optim distributed_fused_adam with dtype bf16, so (NeMo r2.0.0rc1 megatron_base_model.py) optimizer "
     "dtype = model dtype and store_params False: bf16 Adam states, no master copy"),
    ("megatron-bridge", "GPTOSS120B", dict(recompute="selective", recompute_modules="layernorm,moe_act"),
     "Megatron-Bridge scripts/performance/configs/gpt_oss, the H100 BF16 configs of GBS 512 and 1280 "
     "(workload_base_configs.py at cb62f8620, 2025-11-21; gpt_oss_workload_base_configs.py V1 and V2 at "
     "b19588a05, 2026-02-05): recompute_modules=['layernorm', 'moe_act'] (selective recompute of the norms and "
     "the experts' activation)"),
    ("megatron-bridge", "LLAMA31405B", dict(split_embedding_loss=True),
     "Megatron-Bridge recipes/llama/llama3.py llama31_405b_pretrain_config: "
     "account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split True"),
]

# Stacks that pipeline tensor-parallel collectives with the GEMMs
# (Transformer Engine userbuffers, `tp_comm_overlap: True` in the NeMo
# performance recipes and Megatron-Bridge perf configs) when tp > 1; rows
# whose notes list --tp-comm-overlap get it too.
TP_COMM_OVERLAP_STACKS = {
    "nemo": "NeMo-Framework-Launcher performance configs: model.ub_tp_comm_overlap True with tp > 1",
    "megatron-bridge": "Megatron-Bridge performance recipes: tp_comm_overlap with tp > 1",
}

# Stack that computes the loss with a fused cross-entropy kernel.
FUSED_LOSS_STACK = ("llm-foundry",
                    "llm-foundry MPT yamls set loss_fn: fused_crossentropy (flash-attn's xentropy kernel)")

# (gpu family, memory GB or None = any, keywords (any of, lower case, in
# system / inter_node / source_group / source title) or None, profile).
# First match wins.
PROFILE_RULES = [
    ("A100", 80, ("jean zay", "omni-path", "bigscience"), "jean-zay-a100-80gb"),
    ("A100", 80, ("roce", "mosaicml", "llm-foundry"), "mosaicml-a100-80gb-roce"),
    ("A100", 80, None, "a100-sxm4-80gb"),
    ("A100", 40, ("roce", "mosaicml", "llm-foundry"), "mosaicml-a100-40gb-roce"),
    ("A100", 40, None, "a100-sxm4-40gb"),
    ("H100", 80, ("mosaicml", "llm-foundry"), "mosaicml-h100-80gb"),
    ("H100", 80, None, "h100-sxm5-80gb"),
    ("H200", 141, None, "h200-sxm-141gb"),
    ("V100", 16, None, "v100-sxm2-16gb"),
    ("V100", 32, None, "v100-sxm2-32gb"),
    ("P100", 16, None, "p100-sxm2-16gb"),
    ("Ascend 910", None, None, "ascend-910"),
]
# GPU model names in free hardware text (mapping.parse_gpu): (regex, family),
# matched as whole words (GH200 is not an H200); the first in the text wins.
GPU_FAMILIES = [
    ("gh200", "GH200"), ("h200", "H200"), ("h100", "H100"), ("h800", "H800"), ("a100", "A100"), ("a800", "A800"),
    ("v100", "V100"), ("p100", "P100"), (r"ascend[\s-]*910a?", "Ascend 910"),
]
# Text that names only an architecture: (word, its one data-centre part or
# None when it has several).
GPU_ARCHITECTURES = [("volta", "V100"), ("ampere", None), ("hopper", None), ("pascal", None), ("turing", None),
                     ("blackwell", None)]
# Families the parser knows but no bundled profile describes.
GPU_WITHOUT_PROFILE = {
    "GH200": "Grace Hopper superchip: CPU-GPU NVLink-C2C and its memory are not in any profile",
    "H800": "export part with reduced NVLink bandwidth",
    "A800": "export part with reduced NVLink bandwidth",
}
# Per-GPU memory sizes of the SXM/mezzanine parts (NVIDIA datasheets); a
# multiple of 8 of one of them is read as a DGX/HGX system's total.
GPU_MEMORY_SIZES = {"A100": (40, 80), "H100": (80,), "H200": (141,), "V100": (16, 32), "P100": (16,),
                    "Ascend 910": (32,)}
# Memory assumed when the text gives none: family -> (date from, size before,
# size from then on (and when the source date is unknown), why).
MEMORY_BY_DATE = {
    "A100": (2021.0, 40, 80, "A100 80GB announced 16 Nov 2020 (NVIDIA press release) and sold from 2021; "
                             "DGX A100 shipped with 40 GB parts before"),
    "V100": (2018.25, 16, 32, "V100 32GB announced at GTC, 27 Mar 2018; 16 GB before"),
    "H100": (0, 80, 80, "the H100 SXM5 part has 80 GB"),
    "H200": (0, 141, 141, "the H200 SXM part has 141 GB"),
    "P100": (0, 16, 16, "the P100 SXM2 (NVLink) part has 16 GB; the 12 GB part is PCIe"),
}
# Families whose only 16-bit tensor-core type is fp16 (no bf16): 'mixed
# precision' without a dtype is fp16 there.
FP16_ONLY_FAMILIES = ("V100", "P100")
# Families FlashAttention does not run on (FlashAttention-2 needs Ampere or
# newer, Dao-AILab/flash-attention README).
NO_FLASH_FAMILIES = ("V100", "P100")
# GPU variants no bundled profile describes (whole words).
UNSUPPORTED_GPU_WORDS = ("pcie", "nvl")

# Public model configurations, used only to fill fields a row leaves null.
# Keys: the model name upper-cased with everything but letters and digits
# removed ("LLAMA2-13B" -> "LLAMA213B"). vocab "gpt2-bpe" = GPT-2 BPE (50257)
# padded by Megatron to a multiple of 128 x tp (make_vocab_size_divisible_by 128).
# mlp "squared-relu": a 2-matrix MLP, modelled as llama SwiGLU of width 2F/3.
# arch "llama-moe": routed SwiGLU experts of width ffn_hidden in every layer
# (experts, top_k), head_dim when it is not hidden / heads.
KNOWN_CONFIGS = {
    "GPT35B": dict(arch="gpt", layers=24, hidden=4096, heads=32, ffn_hidden=16384, vocab="gpt2-bpe",
                   source="NeMo-Framework-Launcher conf/training/gpt3/5b.yaml"),
    "GPT3175B": dict(arch="gpt", layers=96, hidden=12288, heads=96, ffn_hidden=49152, vocab="gpt2-bpe",
                     source="Brown et al. 2020 Table 2.1; NeMo conf/training/gpt3/175b.yaml (GPT-2 BPE)"),
    "LLAMA27B": dict(arch="llama", layers=32, hidden=4096, heads=32, kv_heads=32, ffn_hidden=11008, vocab=32000,
                     source="meta-llama/Llama-2-7b-hf config.json"),
    "LLAMA213B": dict(arch="llama", layers=40, hidden=5120, heads=40, kv_heads=40, ffn_hidden=13824, vocab=32000,
                      source="meta-llama/Llama-2-13b-hf config.json"),
    "LLAMA270B": dict(arch="llama", layers=80, hidden=8192, heads=64, kv_heads=8, ffn_hidden=28672, vocab=32000,
                      source="meta-llama/Llama-2-70b-hf config.json (GQA, 8 kv heads)"),
    "LLAMA38B": dict(arch="llama", layers=32, hidden=4096, heads=32, kv_heads=8, ffn_hidden=14336, vocab=128256,
                     source="meta-llama/Meta-Llama-3-8B config.json"),
    "LLAMA370B": dict(arch="llama", layers=80, hidden=8192, heads=64, kv_heads=8, ffn_hidden=28672, vocab=128256,
                      source="meta-llama/Meta-Llama-3-70B config.json"),
    "LLAMA31405B": dict(arch="llama", layers=126, hidden=16384, heads=128, kv_heads=8, ffn_hidden=53248,
                        vocab=128256, source="meta-llama/Llama-3.1-405B config.json"),
    "NEMOTRON22B": dict(arch="llama", layers=40, hidden=6144, heads=48, kv_heads=48, ffn_hidden=24576, vocab=256000,
                        mlp="squared-relu",
                        source="NeMo-Framework-Launcher conf/training/nemotron/nemotron_22b.yaml (vocab 256000 "
                               "assumed: the yaml leaves tokenizer.model null; Nemotron's SentencePiece 256k)"),
    "NEMOTRON340B": dict(arch="llama", layers=96, hidden=18432, heads=96, kv_heads=8, ffn_hidden=73728, vocab=256000,
                         mlp="squared-relu",
                         source="NeMo-Framework-Launcher conf/training/nemotron/nemotron_340b.yaml "
                                "(num_query_groups 8, nemotron_2_256k tokenizer)"),
    "QWEN330BA3B": dict(arch="llama-moe", layers=48, hidden=2048, heads=32, kv_heads=4, head_dim=128, ffn_hidden=768,
                        experts=128, top_k=8, vocab=151936,
                        source="Qwen/Qwen3-30B-A3B config.json (head_dim 128, moe_intermediate_size 768, num_experts "
                               "128, num_experts_per_tok 8; decoder_sparse_step 1, no mlp_only_layers: every layer "
                               "routed; no shared expert; QK-norm left out)"),
    "QWEN3235BA22B": dict(arch="llama-moe", layers=94, hidden=4096, heads=64, kv_heads=4, head_dim=128,
                          ffn_hidden=1536, experts=128, top_k=8, vocab=151936,
                          source="Qwen/Qwen3-235B-A22B config.json (head_dim 128, moe_intermediate_size 1536, "
                                 "num_experts 128, num_experts_per_tok 8; every layer routed; no shared expert; "
                                 "QK-norm left out)"),
    "GPTOSS120B": dict(arch="llama-moe", layers=36, hidden=2880, heads=64, kv_heads=8, head_dim=64, ffn_hidden=2880,
                       experts=128, top_k=4, vocab=201088,
                       source="openai/gpt-oss-120b config.json (head_dim 64, intermediate_size 2880, "
                              "num_local_experts 128, experts_per_token 4, vocab_size 201088); its biases, attention "
                              "sinks and the 128-token sliding window of every other layer are left out (full causal "
                              "attention in every layer)"),
}
KNOWN_ALIASES = {"NEMOTRON4340B": "NEMOTRON340B", "LLAMA3170B": "LLAMA370B", "LLAMA318B": "LLAMA38B"}

# Vocabulary when a row gives none and no known config matches its name.
FAMILY_VOCAB = [
    # (keyword in lower-case "type name", vocab, why)
    ("llama-3", 128256, "Llama-3 tokenizer"),
    ("llama3", 128256, "Llama-3 tokenizer"),
    ("llama-2", 32000, "Llama-2 tokenizer"),
    ("llama2", 32000, "Llama-2 tokenizer"),
    ("mpt", 50368, "MPT (GPT-NeoX tokenizer padded to 50368)"),
    ("gpt", 51200, "Megatron GPT-2 BPE padded (SC'21 convention)"),
]

# Megatron-LM examples/sc21/run_table_1.sh (the scripts that reproduce SC'21
# Table 1): (layers, hidden, tp, pp) -> (micro-batch, layers per virtual
# stage or None, DDP implementation: torch = PyTorch DDP, gradient all-reduce
# overlapped with backward; local = Megatron's, after the flush).
SC21_TABLE1 = {
    (24, 2304, 1, 1): (16, None, "torch"),
    (30, 3072, 2, 1): (16, None, "torch"),
    (36, 4096, 4, 1): (16, None, "torch"),
    (40, 6144, 8, 1): (8, None, "torch"),
    (48, 8192, 8, 2): (4, None, "local"),
    (60, 10240, 8, 4): (2, 5, "local"),
    (80, 12288, 8, 8): (2, 5, "local"),
    (96, 16384, 8, 16): (1, 3, "local"),
    (105, 20480, 8, 35): (1, 1, "local"),
    (128, 25600, 8, 64): (1, None, "local"),
}
SC21_SOURCE = "Megatron-LM examples/sc21/run_table_1.sh"

# DeepLearningExamples PyTorch ConvNets configs.yml, resnet50:
# (platform, precision) -> per-GPU batch; optimizer_batch_size 2048 reached by
# gradient accumulation int(2048 / (batch x GPUs)) (main.py batch_size_multiplier).
DLE_RESNET50_BATCH = {
    ("DGX1V", "AMP"): 256,
    ("DGX1V", "FP32"): 112,
    ("DGXA100", "AMP"): 256,
    ("DGXA100", "TF32"): 256,
}
# Same file: the AMP entries set memory_format: nhwc (channels_last); the
# FP32/TF32 ones leave it at main.py's default, nchw.
DLE_RESNET50_NHWC = {("DGX1V", "AMP"), ("DGXA100", "AMP")}
DLE_OPTIMIZER_BATCH = 2048
DLE_DEFAULT_BATCH = 256
DLE_SOURCE = "NVIDIA/DeepLearningExamples PyTorch/Classification/ConvNets/configs.yml (commit 097c7ff)"
