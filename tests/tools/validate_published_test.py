"""Unit tests of tools/validate-published (stdlib unittest; no planner binary needed).

Run: /usr/bin/python3 -m unittest discover -s tests/tools -p '*_test.py'
The end-to-end cases drive the script with a fake `planner` written below.
"""

import copy
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = os.path.join(REPO, "tools")
SCRIPT = os.path.join(TOOLS, "validate-published")
sys.path.insert(0, TOOLS)

from validate_published import era, mapping, measure, ranking, report, search_check, stats  # noqa: E402
from validate_published.mapping import Skip, map_row  # noqa: E402


def row(**over):
    """A small complete row (SC'21 Table 1, 3.6B); keyword args replace
    top-level sections or, as 'section__key', single fields."""
    r = {
        "id": "t-3.6B", "source": {"title": "Narayanan et al. SC'21 (arXiv:2104.04473)", "location": "Table 1"},
        "source_group": "megatron_sc21_table1", "status": "ok",
        "model": {"type": "GPT decoder (dense, GeLU MLP 4h)", "name": None, "params_b": 3.6, "layers": 30,
                  "hidden": 3072, "heads": 32, "kv_heads": None, "ffn_hidden": 12288, "seq_len": 2048,
                  "vocab": 51200, "num_experts": None, "experts_per_token": None},
        "training": {"global_batch_size": 512, "global_batch_tokens": 1048576, "micro_batch_size": None,
                     "grad_accum_steps": None},
        "parallelism": {"tp": 2, "pp": 1, "dp": 32},
        "recompute": "full (FLOP formula Eq.3 includes the extra forward pass)",
        "precision": "mixed precision (16-bit)",
        "hardware": {"gpu": "A100 SXM4 80GB", "num_gpus": 64, "gpus_per_node": 8,
                     "inter_node": "8x 200 Gb/s HDR InfiniBand", "system": "NVIDIA Selene (DGX A100)"},
        "measured": {"tflops_per_gpu": 138, "tflops_includes_recompute": True},
        "derived": None, "notes": "",
    }
    for k, v in over.items():
        if "__" in k:
            sec, key = k.split("__")
            r[sec] = dict(r.get(sec) or {})
            r[sec][key] = v
        else:
            r[k] = v
    return r


# Source fields of the real groups (as in published_runs.json): the software
# a row ran follows from these, never from the source_group name.
SOURCES = {
    "megatron_sc21_table2": dict(notes="ZeRO-3 via DeepSpeed integrated in Megatron codebase, no TP/PP."),
    "korthikanti_2022": dict(source={"title": "Korthikanti et al., 'Reducing Activation Recomputation in Large "
                                              "Transformer Models' (arXiv:2205.05198, MLSys 2023)",
                                     "location": "Table 3 + Table 5"}),
    "megatron_readme_h100_2024": dict(source={"title": "NVIDIA/Megatron-LM, README.md 'Training Speed and Scalability'",
                                              "commit_added": "f2e5db402c44 (2024-07-15)",
                                              "location": "weak-scaling model table (Megatron-Core r0.8.0)"}),
    "nemo_2407_h100_fp8": dict(source={"title": "NVIDIA/NeMo docs/source/performance/performance_summary.md (NeMo "
                                                "24.07 container, DGX-H100, version of 2024-09-09)",
                                       "location": "Pretraining table (FP8)"}),
    "megatron_bridge_h100": dict(source={"title": "NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md "
                                                  "(DGX-H100 rows; NeMo 25.11 and 26.02 containers)"}),
    "mosaicml_llm_foundry": dict(source={"title": "mosaicml/llm-foundry scripts/train/benchmarking/README.md (MPT "
                                                  "training benchmarks, commit 495218376830)"}),
    "bigscience_bloom_search": dict(source={"title": "bigscience-workshop/bigscience train/tr11-176B-ml/"
                                                     "chronicles-prequel.md (BLOOM-176B topology search, Feb 2022)"},
                                    notes="Snapshot of iteration 2 only. Megatron-DeepSpeed."),
    "dle_resnet50": dict(source={"title": "NVIDIA/DeepLearningExamples PyTorch/Classification/ConvNets/resnet50v1.5/"
                                          "README.md (pytorch-21.03 NGC container)"},
                         notes="PyTorch DDP, DALI data loading, 224x224 images"),
}


def src(group, **over):
    """Keyword arguments of row() for a row of that group: source_group,
    source and notes as the real group has them; over replaces any."""
    return {"source_group": group, **SOURCES[group], **over}


def flag(m, name):
    """Value after `name` in the estimate args, True for a bare flag, None if absent."""
    a = m.estimate_args
    if name not in a:
        return None
    i = a.index(name)
    return a[i + 1] if i + 1 < len(a) and not a[i + 1].startswith("--") else True


class FlopConventions(unittest.TestCase):
    def test_megatron_eq3_sc21_3_6b(self):
        # SC'21 Table 1, 3.6B: B=512, s=2048, l=30, h=3072, V=51200, 64 GPUs at 138 TFLOP/s.
        # 96 B s l h^2 = 96*512*2048*30*3072^2 = 2.84993e16
        # 1 + s/6h + V/16lh = 1 + 2048/18432 + 51200/1474560 = 1 + 0.111111 + 0.034722 = 1.145833
        # F = 3.26555e16; t = F / (64 * 138e12) = 3.26555e16 / 8.832e15 = 3.6974 s (paper-derived 3.7)
        F = measure.megatron_hw_flops(512, 2048, 30, 3072, 51200)
        self.assertAlmostEqual(F / 3.26555e16, 1.0, places=4)
        r = row()
        t, how = measure.measured_iteration(r, map_row(r, REPO).eff)
        self.assertAlmostEqual(t, 3.6974, places=3)
        self.assertIn("Eq. 3", how)

    def test_model_flops_megatron_readme_119b(self):
        # Megatron README 119B: B=768, s=4096, l=92, h=10240, V=131072, 1536 GPUs at 420.5 TFLOP/s (model).
        # 72 B s l h^2 = 72*768*4096*92*10240^2 = 2.18495e18
        # 1 + 4096/61440 + 131072/(12*92*10240) = 1 + 0.066667 + 0.011594 = 1.078261
        # F = 2.35595e18; t = F / (1536 * 420.5e12) = 2.35595e18 / 6.45888e17 = 3.6476 s
        F = measure.model_flops(768, 4096, 92, 10240, 131072)
        self.assertAlmostEqual(F / 2.35595e18, 1.0, places=4)
        r = row(model__layers=92, model__hidden=10240, model__heads=80, model__ffn_hidden=None, model__seq_len=4096,
                model__vocab=131072, training={"global_batch_size": 768}, parallelism={"tp": 8, "pp": 4, "dp": 48},
                hardware__num_gpus=1536, measured={"tflops_per_gpu": 420.5, "tflops_includes_recompute": False},
                hardware__gpu="H100 SXM 80GB", **src("megatron_readme_h100_2024"))
        t, how = measure.measured_iteration(r, map_row(r, REPO).eff)
        self.assertAlmostEqual(t, 3.6476, places=3)
        self.assertIn("model FLOPs", how)

    def test_recompute_inclusive_tflops_by_recompute_mode(self):
        # B=1, s=2048, l=1, h=1024, V=0:
        # model = 72 x 2048 x 1024^2 x (1 + 2048/6144) = 1.54619e11 x 1.33333 = 2.06158e11
        # selective adds the attention core forward 4 B s^2 l h = 4 x 2048^2 x 1024 = 1.71799e10 -> 2.23338e11
        # full (Eq. 3) = 96 x 2048 x 1024^2 x (1 + 1/3) = 2.06158e11 x 1.33333 = 2.74878e11
        F, how = measure.hardware_flops(1, 2048, 1, 1024, 0, "selective")
        self.assertAlmostEqual(F / 2.23338e11, 1.0, places=4)
        self.assertIn("attention core", how)
        self.assertAlmostEqual(measure.hardware_flops(1, 2048, 1, 1024, 0, "none")[0] / 2.06158e11, 1.0, places=4)
        self.assertAlmostEqual(measure.hardware_flops(1, 2048, 1, 1024, 0, "full")[0] / 2.74878e11, 1.0, places=4)
        # A row with TFLOP/s that include recompute and selective recompute is converted with the
        # selective count, not Eq. 3 (which assumes full recompute).
        r = row(recompute="selective")
        t_sel, how = measure.measured_iteration(r, map_row(r, REPO).eff)
        t_full, _ = measure.measured_iteration(row(), map_row(row(), REPO).eff)
        self.assertIn("selective", how)
        self.assertLess(t_sel, t_full)

    def test_six_n_tokens_when_shape_unknown(self):
        # 6 x 7e9 params x (128 x 4096 tokens) / (8 GPUs x 400e12) = 2.2020e16 / 3.2e15 = 6.8813 s
        eff = {"gbs": 128, "seq": 4096, "num_gpus": 8, "layers": None, "hidden": None, "vocab": None}
        r = {"model": {"params_b": 7}, "measured": {"tflops_per_gpu": 400, "tflops_includes_recompute": False}}
        t, how = measure.measured_iteration(r, eff)
        self.assertAlmostEqual(t, 6.8813, places=3)
        self.assertIn("6 x params", how)

    def test_order_of_conversions(self):
        eff = {"gbs": 128, "seq": 4096, "num_gpus": 8}
        m = {"iteration_time_s": 2.0, "tokens_per_s_per_gpu": 1000}
        self.assertEqual(measure.measured_iteration({"measured": m}, eff), (2.0, "measured.iteration_time_s"))
        t, how = measure.measured_iteration({"measured": {"tokens_per_s_per_gpu": 16384}}, eff)
        self.assertAlmostEqual(t, 128 * 4096 / (16384 * 8))  # 4.0 s
        t, how = measure.measured_iteration({"measured": {"tokens_per_s": 65536}}, eff)
        self.assertAlmostEqual(t, 8.0)  # 524288 tokens / 65536
        t, how = measure.measured_iteration({"measured": {"samples_per_s": 64}}, eff)
        self.assertAlmostEqual(t, 2.0)  # 128 / 64
        t, how = measure.measured_iteration({"measured": {"tflops_per_gpu": 1}}, eff)
        self.assertIsNone(t)
        self.assertIn("convention", how)
        self.assertIsNone(measure.measured_iteration({"measured": {"other": {"forward_ms": 7}}}, eff)[0])


class TextParsing(unittest.TestCase):
    def test_recompute(self):
        P = mapping.parse_recompute
        self.assertEqual(P(None)[0], "none")
        self.assertEqual(P("none"), ("none", None))
        self.assertEqual(P("full activation checkpointing"), ("full", None))
        self.assertEqual(P("selective (attention core)")[0], "selective")
        self.assertIsNotNone(P("selective (attention core)")[1])
        self.assertEqual(P("full (assumed; FLOP accounting as Table 1)")[0], "full")
        self.assertEqual(P("activation checkpointing every layer")[0], "full")
        with self.assertRaises(Skip):
            P("offload to NVMe")

    def test_precision(self):
        P = lambda t: mapping.parse_precision(t)[0]
        self.assertEqual(P("amp_bf16"), "bf16")
        self.assertEqual(P("amp_fp8"), "fp8")
        self.assertEqual(P("FP8-CS"), "fp8")
        self.assertEqual(P("fp8 (Transformer Engine)"), "fp8")
        self.assertEqual(P("bf16 (BF16Optimizer, fp32 grad accumulation)"), "bf16")
        self.assertEqual(P("fp16 (grad accumulation in fp16)"), "fp16")
        self.assertEqual(P("mixed precision (16-bit)"), "fp16")
        self.assertEqual(P("AMP (fp16)"), "fp16")
        self.assertEqual(P("AMP"), "fp16")
        self.assertEqual(P("TF32"), "tf32")
        self.assertEqual(P("FP32"), "fp32")
        self.assertIsNone(mapping.parse_precision("amp_bf16")[1])
        for bad in (None, "", "int4 magic", "int8 quantised"):
            with self.assertRaises(Skip):
                mapping.parse_precision(bad)

    def test_precision_free_text(self):
        # Invented texts in the shapes sources use.
        P = lambda t, fam=None: mapping.parse_precision(t, fam)[0]
        self.assertEqual(P("mixed precision"), "fp16")
        self.assertIn("same tensor-core peak", mapping.parse_precision("mixed precision", "A100")[1])
        self.assertIn("V100 has no bf16", mapping.parse_precision("Mixed-precision training", "V100")[1])
        self.assertEqual(P("AMP"), "fp16")
        self.assertEqual(P("torch.cuda.amp"), "fp16")
        self.assertEqual(P("bf16 mixed"), "bf16")
        self.assertEqual(P("BFloat16 mixed precision (fp32 master weights)"), "bf16")
        self.assertEqual(P("fp16 (apex O2)"), "fp16")
        self.assertEqual(P("apex amp O1"), "fp16")
        self.assertEqual(P("FP8 hybrid (E4M3 fwd / E5M2 bwd)"), "fp8")
        self.assertEqual(P("half precision"), "fp16")
        self.assertEqual(P("TensorFloat-32"), "tf32")
        self.assertEqual(P("full precision"), "fp32")

    def test_gpu_free_text(self):
        G = lambda t, date=None: mapping.parse_gpu(t, date)[:2]
        self.assertEqual(G("A100 SXM4 (DGX A100)", 2020.5), ("A100", 40))     # before the 80 GB part
        self.assertEqual(G("A100 SXM4 (DGX A100)", 2022.0), ("A100", 80))
        self.assertEqual(G("A100 SXM4 (DGX A100)"), ("A100", 80))             # date unknown: noted
        self.assertIn("source date unknown", mapping.parse_gpu("A100 SXM4 (DGX A100)")[2][0])
        self.assertEqual(G("NVIDIA Ampere (A100 implied by the 312 TFLOP/s peak)", 2021.3), ("A100", 80))
        self.assertEqual(G("DGX A100 640GB"), ("A100", 80))                   # system total / 8
        self.assertEqual(G("H100 80GB HBM3"), ("H100", 80))
        self.assertEqual(G("NVIDIA H100 SXM5"), ("H100", 80))
        self.assertEqual(G("V100-SXM2-16GB"), ("V100", 16))
        self.assertEqual(G("Tesla V100 (32 GB)"), ("V100", 32))
        self.assertEqual(G("Tesla V100", 2017.9), ("V100", 16))
        self.assertEqual(G("NVIDIA Volta", 2019.0), ("V100", 32))           # Volta's one data-centre part
        self.assertEqual(G("Tesla P100"), ("P100", 16))
        self.assertEqual(G("P100-SXM2-16GB"), ("P100", 16))
        self.assertEqual(G("H200 141GB HBM3e"), ("H200", 141))
        self.assertEqual(G("Ascend 910"), ("Ascend 910", None))
        for text, why in [("NVIDIA GH200 Grace Hopper", "Grace Hopper"), ("H100 PCIe", "PCIe"),
                          ("H100 NVL", "PCIe/NVL"), ("Tesla P100-PCIE-12GB", "PCIe"),
                          ("NVIDIA Ampere", "only an architecture"), ("A800 80GB", "export part"),
                          ("A100 24GB", "memory size not one of"), ("TPU v4", "unknown hardware"),
                          ("Ascend 910B", "unknown hardware"), ("", "not given")]:
            with self.assertRaises(Skip, msg=text) as c:
                mapping.parse_gpu(text)
            self.assertIn(why, str(c.exception), text)

    def test_p100_row(self):
        m = map_row(row(hardware={"gpu": "Tesla P100", "num_gpus": 8}, parallelism={"tp": 1, "pp": 1, "dp": 8},
                        source={"title": "Invented 2018 paper (arXiv:1803.00001)"}, precision="mixed precision",
                        training={"global_batch_size": 64, "micro_batch_size": 8}), REPO)
        self.assertEqual(flag(m, "--profile"), "cost_profiles/p100-sxm2-16gb.json")
        self.assertEqual((flag(m, "--precision"), flag(m, "--attention")), ("fp16", "unfused"))
        self.assertTrue(any("P100 has no bf16" in n for n in m.notes))

    def test_gpu_text_in_a_row(self):
        # 'DGX A100' without memory in a 2020 source -> the 40 GB profile; precision 'mixed precision'.
        m = map_row(row(hardware={"gpu": "A100 SXM4 (DGX A100)", "num_gpus": 64, "gpus_per_node": 8},
                        source={"title": "Doe et al. (arXiv:2010.00001)"}, precision="mixed precision"), REPO)
        self.assertEqual(flag(m, "--profile"), "cost_profiles/a100-sxm4-40gb.json")
        self.assertEqual(flag(m, "--precision"), "fp16")


class RowMapping(unittest.TestCase):
    def test_sc21_table1_microbatch_from_script(self):
        m = map_row(row(), REPO)
        # Megatron's GPT shares the token embedding with the output layer.
        self.assertEqual(m.model_args, ["gpt", "--layers", "30", "--hidden", "3072", "--heads", "32", "--ffn", "12288",
                                        "--seq", "2048", "--vocab", "51200", "--batch", "16", "--tie-embeddings"])
        self.assertEqual(flag(m, "--micro-batch"), "16")
        self.assertEqual(flag(m, "--global-batch"), "512")
        self.assertEqual(flag(m, "--profile"), "cost_profiles/a100-sxm4-80gb.json")
        self.assertEqual((flag(m, "--recompute"), flag(m, "--precision"), flag(m, "--attention")),
                         ("full", "fp16", "unfused"))
        self.assertEqual(flag(m, "--framework"), "megatron-legacy")
        self.assertIsNone(flag(m, "--gpus-per-node"))
        self.assertEqual(m.estimate_args[-1], "--json")
        # 145.6B: 80 layers, pp 8, 5 layers per virtual stage in run_table_1.sh -> vp 2
        m = map_row(row(model__layers=80, model__hidden=12288, model__heads=96, model__ffn_hidden=49152,
                        parallelism={"tp": 8, "pp": 8, "dp": 24}, hardware__num_gpus=1536,
                        training={"global_batch_size": 2304}), REPO)
        self.assertEqual((flag(m, "--vp"), flag(m, "--schedule"), flag(m, "--micro-batch")), ("2", "interleaved", "2"))

    def test_sc21_table2_zero3(self):
        m = map_row(row(**src("megatron_sc21_table2"), training={"global_batch_size": 1536, "micro_batch_size": 2},
                        parallelism={"tp": 1, "pp": 1, "dp": 768, "zero_stage": 3}, hardware__num_gpus=768), REPO)
        self.assertEqual((flag(m, "--zero"), flag(m, "--framework"), flag(m, "--dp")), ("3", "deepspeed", "768"))

    def test_korthikanti(self):
        m = map_row(row(**src("korthikanti_2022"), recompute="selective (attention core)",
                        training={"global_batch_size": 64, "micro_batch_size": 1},
                        parallelism={"tp": 8, "pp": 8, "dp": 1, "sequence_parallel": True, "virtual_pipeline_stages": 3},
                        model__layers=96, model__hidden=12288, model__heads=96, model__ffn_hidden=49152), REPO)
        self.assertEqual((flag(m, "--sp"), flag(m, "--vp"), flag(m, "--recompute")), (True, "3", "selective"))

    def test_megatron_readme(self):
        m = map_row(row(**src("megatron_readme_h100_2024"), hardware={"gpu": "H100 SXM 80GB", "num_gpus": 1536},
                        model__ffn_hidden=None, training={"global_batch_size": 768}, recompute=None,
                        precision="bf16 (inferred)", notes="Flags: --tp-comm-overlap",
                        parallelism={"tp": 8, "pp": 4, "dp": 48, "distributed_optimizer": True}), REPO)
        self.assertNotIn("--ffn", m.model_args)
        self.assertIsNone(flag(m, "--grad-reduce-bytes"))  # Megatron-LM bf16: fp32 main grads
        self.assertEqual(flag(m, "--profile"), "cost_profiles/h100-sxm5-80gb.json")
        self.assertEqual((flag(m, "--sp"), flag(m, "--distributed-optimizer"), flag(m, "--micro-batch")), (True, True, "1"))
        self.assertEqual((flag(m, "--attention"), flag(m, "--framework")), ("flash", "megatron"))
        self.assertTrue(any("micro-batch not published" in n for n in m.notes))

    def test_nemo_known_config(self):
        m = map_row(row(**src("nemo_2407_h100_fp8"), model={"type": "decoder LLM", "name": "LLAMA2-13B",
                                                                  "seq_len": 4096},
                        training={"global_batch_size": 128, "micro_batch_size": 1},
                        parallelism={"tp": 1, "pp": 4, "dp": 4, "cp": 1, "virtual_pipeline_stages": 10},
                        hardware={"gpu": "H100 SXM 80GB", "num_gpus": 16, "gpus_per_node": 8, "system": "DGX-H100"},
                        precision="fp8 (Transformer Engine)", recompute=None), REPO)
        self.assertEqual(m.model_args[:7], ["llama", "--layers", "40", "--hidden", "5120", "--heads", "40"])
        self.assertIn("13824", m.model_args)
        self.assertIn("32000", m.model_args)
        self.assertNotIn("--kv-heads", m.model_args)
        self.assertEqual((flag(m, "--vp"), flag(m, "--precision"), flag(m, "--cp")), ("10", "fp8", None))
        # NeMo conventions: distributed optimizer (dp 4 > 1); no SP with tp 1
        self.assertEqual((flag(m, "--distributed-optimizer"), flag(m, "--sp")), (True, None))
        # NeMo H100 performance configs reduce gradients in bf16 (grad_sync_dtype bf16)
        self.assertEqual(flag(m, "--grad-reduce-bytes"), "2")
        self.assertTrue(any("grad_sync_dtype" in n for n in m.notes))
        # Nemotron-340B: GQA 8, squared-ReLU 73728 -> SwiGLU 49152
        m = map_row(row(**src("nemo_2407_h100_fp8"), model={"type": "decoder LLM", "name": "Nemotron-340B",
                                                                  "seq_len": 4096},
                        training={"global_batch_size": 32, "micro_batch_size": 1},
                        parallelism={"tp": 8, "pp": 8, "dp": 2, "virtual_pipeline_stages": 12},
                        hardware={"gpu": "H100 SXM 80GB", "num_gpus": 128}, precision="fp8", recompute=None), REPO)
        self.assertEqual(m.model_args[m.model_args.index("--kv-heads") + 1], "8")
        self.assertEqual(m.model_args[m.model_args.index("--ffn") + 1], "49152")
        self.assertEqual(m.model_args[m.model_args.index("--vocab") + 1], "256000")
        self.assertEqual((flag(m, "--distributed-optimizer"), flag(m, "--sp")), (True, True))  # tp 8
        # Its NeMo 24.07 recipe: selective recompute (the row leaves it null),
        # bf16 Adam states and no master copy.
        self.assertEqual((flag(m, "--recompute"), flag(m, "--optimizer-state-dtype"), flag(m, "--master-weights")),
                         ("selective", "bf16", "none"))
        self.assertTrue(any("nemotron_340b.yaml" in n for n in m.notes))

    def test_recipe_settings(self):
        nemo = dict(**src("nemo_2407_h100_fp8"), training={"global_batch_size": 128, "micro_batch_size": 1},
                    hardware={"gpu": "H100 SXM 80GB", "num_gpus": 8}, parallelism={"tp": 1, "pp": 1, "dp": 8})
        # Other NeMo bf16/fp8 models keep 16-bit master remainders (Apex store_param_remainders).
        m = map_row(row(model={"type": "decoder LLM", "name": "LLAMA2-7B", "seq_len": 4096}, precision="fp8",
                        recompute=None, **nemo), REPO)
        self.assertEqual((flag(m, "--master-weights"), flag(m, "--optimizer-state-dtype")), ("remainder", None))
        self.assertEqual(flag(m, "--recompute"), "none")
        # A recompute the row states is kept over the recipe's.
        m = map_row(row(model={"type": "decoder LLM", "name": "Nemotron-340B", "seq_len": 4096}, precision="fp8",
                        recompute="full", **dict(nemo, parallelism={"tp": 8, "pp": 1, "dp": 1})), REPO)
        self.assertEqual((flag(m, "--recompute"), flag(m, "--optimizer-state-dtype")), ("full", "bf16"))
        # fp32 rows of the group: no remainders (the model is not bf16).
        m = map_row(row(model={"type": "decoder LLM", "name": "LLAMA2-7B", "seq_len": 4096}, precision="fp32",
                        recompute=None, **nemo), REPO)
        self.assertIsNone(flag(m, "--master-weights"))
        # Megatron-Bridge's Llama 3.1 405B recipe counts embedding and loss in the pipeline split.
        m = map_row(row(**src("megatron_bridge_h100"), model={"type": "decoder LLM", "name": "LLAMA3.1_405B",
                                                                    "seq_len": 8192},
                        training={"global_batch_size": 1536, "micro_batch_size": 1}, precision="FP8-CS",
                        hardware={"gpu": "H100 SXM 80GB", "num_gpus": 1024}, recompute=None,
                        parallelism={"tp": 8, "pp": 8, "dp": 8, "cp": 2, "virtual_pipeline_stages": 8}), REPO)
        self.assertTrue(flag(m, "--split-embedding-loss"))
        self.assertIsNone(flag(m, "--master-weights"))
        # Its GPT-OSS 120B H100 configs recompute the norms and the experts'
        # activation (selective with modules), unless the row says otherwise.
        oss = dict(**src("megatron_bridge_h100"), model={"type": "MoE decoder", "name": "GPT-OSS-120B",
                                                         "seq_len": 4096},
                   training={"global_batch_size": 512, "micro_batch_size": 1}, precision="BF16",
                   hardware={"gpu": "H100 SXM 80GB", "num_gpus": 64},
                   parallelism={"tp": 1, "pp": 4, "dp": 16, "ep": 8})
        m = map_row(row(recompute=None, **oss), REPO)
        self.assertEqual((flag(m, "--recompute"), flag(m, "--recompute-modules")), ("selective", "layernorm,moe_act"))
        self.assertIn("rc-selective(layernorm,moe_act)", m.plan)
        m = map_row(row(recompute="full", **oss), REPO)
        self.assertEqual((flag(m, "--recompute"), flag(m, "--recompute-modules")), ("full", None))

    def test_bridge_llama_and_moe(self):
        base = dict(**src("megatron_bridge_h100"), hardware={"gpu": "H100 SXM 80GB", "num_gpus": 64},
                    training={"global_batch_size": 128, "micro_batch_size": 1}, recompute=None, precision="FP8-CS")
        m = map_row(row(model={"type": "Llama 3 decoder (GQA, SwiGLU)", "name": "LLAMA3_70B", "layers": 80,
                               "hidden": 8192, "heads": 64, "kv_heads": 8, "ffn_hidden": 28672, "seq_len": 8192,
                               "vocab": 128000}, parallelism={"tp": 4, "pp": 8, "dp": 2, "ep": 1}, **base), REPO)
        self.assertEqual(m.arch, "llama")
        self.assertIsNone(flag(m, "--ep"))
        self.assertNotIn("--tie-embeddings", m.model_args)  # Llama keeps its own lm_head
        # Megatron-Bridge's performance configs reduce gradients in bf16
        # (grad_reduce_in_fp32 = False), for fp8 and bf16 rows, not fp32.
        self.assertEqual(flag(m, "--grad-reduce-bytes"), "2")
        self.assertIn("grad-bf16", m.plan)
        self.assertTrue(any("grad_reduce_in_fp32 = False" in n for n in m.notes))
        m32 = map_row(row(model={"type": "Llama 3 decoder (GQA, SwiGLU)", "name": "LLAMA3_70B", "layers": 80,
                                 "hidden": 8192, "heads": 64, "kv_heads": 8, "ffn_hidden": 28672, "seq_len": 8192,
                                 "vocab": 128000}, parallelism={"tp": 4, "pp": 8, "dp": 2, "ep": 1},
                          **dict(base, precision="FP32")), REPO)
        self.assertIsNone(flag(m32, "--grad-reduce-bytes"))
        # A MoE row naming a public config: llama-moe with its head size,
        # experts and top-k from the config, ep passed on.
        m = map_row(row(model={"type": "MoE decoder", "name": "Qwen3-30B-A3B", "seq_len": 4096},
                        parallelism={"tp": 1, "pp": 2, "dp": 32, "ep": 8}, **base), REPO)
        self.assertEqual(m.arch, "llama-moe")
        self.assertEqual(flag(m, "--ep"), "8")
        margs = " ".join(m.model_args)
        for part in ("--head-dim 128", "--kv-heads 4", "--ffn 768", "--experts 128", "--top-k 8", "--vocab 151936"):
            self.assertIn(part, margs)
        # Without a known config (or experts and top-k in the row) it is skipped.
        with self.assertRaisesRegex(Skip, "MoE details missing"):
            map_row(row(model={"type": "MoE decoder", "name": "Private-MoE-1T", "seq_len": 4096},
                        parallelism={"tp": 1, "pp": 2, "dp": 32, "ep": 8}, **base), REPO)

    def test_unknown_decoder_keeps_its_output_layer(self):
        # A decoder of no named family maps to gpt but is not assumed tied.
        m = map_row(row(model={"type": "decoder-only transformer", "name": "Acme-7B", "layers": 32, "hidden": 4096,
                               "heads": 32, "ffn_hidden": 16384, "seq_len": 2048, "vocab": 32000}), REPO)
        self.assertEqual(m.arch, "gpt")
        self.assertNotIn("--tie-embeddings", m.model_args)

    def test_mosaicml(self):
        m = map_row(row(**src("mosaicml_llm_foundry"),
                        model={"type": "MPT decoder (ALiBi, no bias, expansion 4)", "name": "MPT-1b", "layers": 24,
                               "hidden": 2048, "heads": 16, "ffn_hidden": 8192, "seq_len": 2048, "vocab": 50368},
                        training={"global_batch_size": 512, "micro_batch_size": 8},
                        parallelism={"tp": 1, "pp": 1, "dp": 8, "fsdp": "PyTorch FSDP SHARD_GRAD_OP"},
                        hardware={"gpu": "A100 40GB", "num_gpus": 8, "inter_node": "1600 Gbps per node RoCE"},
                        recompute="none", precision="amp_bf16"), REPO)
        self.assertEqual(flag(m, "--profile"), "cost_profiles/mosaicml-a100-40gb-roce.json")
        self.assertEqual((flag(m, "--zero"), flag(m, "--framework"), flag(m, "--attention")), ("2", "fsdp", "flash"))
        self.assertTrue(any("MPT approximated as gpt" in n for n in m.notes))
        self.assertIn("--tie-embeddings", m.model_args)  # MPT's logits come from transformer.wte
        self.assertIsNone(flag(m, "--grad-reduce-bytes"))
        m = map_row(row(**src("mosaicml_llm_foundry"), model__type="MPT decoder", training={"global_batch_size": 64,
                        "micro_batch_size": 8}, parallelism={"dp": 8, "zero_stage": 3,
                        "fsdp": "PyTorch FSDP FULL_SHARD (mixed_precision=PURE)"},
                        hardware={"gpu": "H100 80GB", "num_gpus": 8}, recompute="none", precision="bf16"), REPO)
        self.assertEqual((flag(m, "--zero"), flag(m, "--grad-reduce-bytes")), ("3", "2"))
        self.assertEqual(flag(m, "--profile"), "cost_profiles/mosaicml-h100-80gb.json")
        self.assertIsNone(flag(m, "--distributed-optimizer"))

    def test_bloom(self):
        m = map_row(row(**src("bigscience_bloom_search"), model__name="BLOOM-shape 181B", model__vocab=250000,
                        model__layers=72, model__hidden=14336, model__heads=64, model__ffn_hidden=57344,
                        training={"global_batch_size": 2048, "micro_batch_size": 2},
                        parallelism={"tp": 8, "pp": 10, "dp": 8, "zero_stage": 1}, recompute="full activation checkpointing",
                        hardware={"gpu": "A100 SXM4 80GB", "num_gpus": 320, "gpus_per_node": 8,
                                  "inter_node": "Omni-Path (4 links per node)", "system": "Jean Zay (IDRIS)"}), REPO)
        self.assertEqual(flag(m, "--profile"), "cost_profiles/jean-zay-a100-80gb.json")
        self.assertEqual((flag(m, "--framework"), flag(m, "--zero"), flag(m, "--schedule")), ("deepspeed", "1", "1f1b"))
        self.assertEqual(flag(m, "--dp"), "4")  # 8 x 10 x 8 = 640 != 320 GPUs: dp from num_gpus, noted
        self.assertTrue(any("disagrees with num_gpus" in n for n in m.notes))

    def test_dle_resnet(self):
        r = row(**src("dle_resnet50"), model={"type": "CNN", "name": "ResNet-50 v1.5"}, training={},
                parallelism={"dp": 8}, recompute=None, precision="AMP (fp16)",
                hardware={"gpu": "V100 16GB", "num_gpus": 8, "gpus_per_node": 8, "system": "DGX-1"},
                measured={"samples_per_s": 8322})
        m = map_row(r, REPO)
        self.assertEqual(m.model_args, ["resnet", "--depth", "50", "--image", "224", "--classes", "1000", "--batch", "256"])
        # V100: no FlashAttention, so unfused even though a CNN has no attention (the planner checks the mode)
        self.assertEqual((flag(m, "--global-batch"), flag(m, "--framework"), flag(m, "--attention")),
                         ("2048", "ddp", "unfused"))
        self.assertEqual(flag(m, "--profile"), "cost_profiles/v100-sxm2-16gb.json")
        a100 = row(**{**{k: v for k, v in r.items() if k != "id"},
                      "hardware": {"gpu": "A100 80GB", "num_gpus": 1, "system": "DGX A100"}, "parallelism": {"dp": 1}})
        m1 = map_row(a100, REPO)
        self.assertIsNone(flag(m1, "--attention"))  # A100 AMP: flag omitted for a CNN
        # 1 GPU x 256: accumulation int(2048 / 256) = 8 -> global batch 2048
        self.assertEqual(flag(m1, "--global-batch"), "2048")
        a100["precision"] = "TF32"
        self.assertEqual(flag(map_row(a100, REPO), "--attention"), "unfused")
        # configs.yml: AMP runs channels_last (nhwc), TF32/FP32 keep main.py's nchw
        self.assertEqual(flag(m, "--memory-format"), "nhwc")
        self.assertEqual(flag(m1, "--memory-format"), "nhwc")
        self.assertEqual(flag(map_row(a100, REPO), "--memory-format"), "nchw")
        t, how = measure.measured_iteration(r, m.eff)
        self.assertAlmostEqual(t, 2048 / 8322)
        r["measured"] = {}
        with self.assertRaises(Skip):  # no per-GPU batch and no samples_per_s
            map_row(r, REPO)

    def test_gpus_per_node_override(self):
        m = map_row(row(hardware__gpus_per_node=4), REPO)
        self.assertEqual(flag(m, "--gpus-per-node"), "4")


class SkipReasons(unittest.TestCase):
    def assertSkip(self, r, text):
        with self.assertRaises(Skip) as c:
            map_row(r, REPO)
        self.assertIn(text, str(c.exception))

    def test_reasons(self):
        self.assertSkip("not a row", "not a JSON object")
        self.assertSkip(row(hardware__gpu="MI300X 192GB"), "unknown hardware")
        self.assertSkip(row(hardware__gpu=None), "hardware.gpu not given")
        self.assertSkip(row(hardware__gpu="H100 PCIe 80GB"), "PCIe")
        self.assertSkip(row(model={"type": "GPT decoder", "name": "Mystery-9B", "seq_len": 2048}), "model shape missing")
        self.assertSkip(row(model__heads=7), "not divisible by heads")
        self.assertSkip(row(model__type="diffusion UNet"), "unknown model type")
        self.assertSkip(row(status="crashed"), "status")
        self.assertSkip(row(precision=None), "precision not given")
        self.assertSkip(row(training={"micro_batch_size": 3}), "global batch size not given")
        self.assertSkip(row(training={"global_batch_size": 500, "micro_batch_size": 4}), "not a multiple")
        self.assertSkip(row(parallelism={"tp": 3, "pp": 1}), "num_gpus 64 is not a multiple")
        self.assertSkip(row(model__num_experts=8), "MoE details missing")

    def test_wrong_types_do_not_crash(self):
        r = row(model="oops", parallelism=None, training=[1, 2], hardware={"gpu": 5})
        with self.assertRaises(Skip):
            map_row(r, REPO)
        r = row(parallelism={"tp": "2", "pp": 1.0, "dp": "32"})  # numeric strings and floats are read
        self.assertEqual(flag(map_row(r, REPO), "--tp"), "2")


class Arithmetic(unittest.TestCase):
    def test_nearest_rank(self):
        # n = 10, p90: rank ceil(0.9 x 10) = 9 -> 9th smallest
        self.assertEqual(stats.nearest_rank(list(range(1, 11)), 90), 9)
        # n = 4, p90: rank ceil(3.6) = 4 -> the largest
        self.assertEqual(stats.nearest_rank([5, 1, 3, 2], 90), 5)
        self.assertEqual(stats.nearest_rank([7], 90), 7)
        self.assertIsNone(stats.nearest_rank([], 90))

    def test_summary(self):
        def res(i, err, outcome="compared", fits=True, status="ok", mem=None):
            return {"id": f"r{i}", "group": "g", "status": status, "outcome": outcome, "error_pct": err,
                    "fits": fits, "memory_error_pct": mem}
        rs = [res(1, 10.0), res(2, -30.0, fits=False, mem=-5.0), res(3, 5.0, mem=15.0),
              res(4, None, "oom_checked", fits=False, status="OOM"), res(5, None, "oom_checked", True, "OOM"),
              res(6, None, "skipped", None), res(7, None, "failed", None)]
        s = stats.summarize(rs)
        self.assertAlmostEqual(s["mean_abs_error_pct"], 15.0)      # (10 + 30 + 5) / 3
        self.assertAlmostEqual(s["mean_signed_error_pct"], -5.0)   # (10 - 30 + 5) / 3
        self.assertEqual(s["p90_abs_error_pct"], 30.0)             # rank ceil(2.7) = 3 of [5, 10, 30]
        self.assertEqual(s["worst"], {"id": "r2", "error_pct": -30.0})
        self.assertEqual(s["above_threshold"], ["r2"])
        self.assertEqual((s["oom_rows"], s["oom_agree"]), (2, 1))
        self.assertEqual(s["fits_disagreements_ok_rows"], ["r2"])
        self.assertAlmostEqual(s["memory_mean_abs_error_pct"], 10.0)  # (5 + 15) / 2
        self.assertEqual((s["rows"], s["evaluated"], s["skipped"], s["failed"]), (7, 5, 1, 1))
        self.assertAlmostEqual(stats.error_pct(1.1, 1.0), 10.0)


class Era(unittest.TestCase):
    """The software a row ran follows from its source's date and named software (invented rows)."""

    def date(self, title, notes="", **source):
        return era.source_date({"source": {"title": title, **source}, "notes": notes})[0]

    def test_source_date(self):
        self.assertAlmostEqual(self.date("Doe et al. (arXiv:2109.01234)"), 2021 + 8 / 12)     # Sept 2021
        self.assertAlmostEqual(self.date("Doe, arXiv 2109.01234, NeurIPS 2023"), 2021 + 8 / 12)  # arXiv beats year
        self.assertAlmostEqual(self.date("blog, version of 2023-03-15 (2024 update)"), 2023 + 2 / 12)
        self.assertAlmostEqual(self.date("perf table", commit_added="abc (2022-11-30)"), 2022 + 10 / 12)
        self.assertAlmostEqual(self.date("NeMo 23.11 container, DGX H100"), 2023 + 10 / 12)
        self.assertAlmostEqual(self.date("README (pytorch-20.06 NGC container)"), 2020 + 5 / 12)
        self.assertAlmostEqual(self.date("logbook, Sept 2020"), 2020 + 8 / 12)
        self.assertAlmostEqual(self.date("Roe et al., ISCA'20"), 2020.0)
        self.assertAlmostEqual(self.date("Roe et al., MLSys 2022 and 2023"), 2022.0)           # earliest
        self.assertIsNone(self.date("repo README, seq 2048, commit 2019abc, 1536 GPUs"))
        self.assertAlmostEqual(self.date("repo README", notes="measured in 2021"), 2021.0)     # notes last
        self.assertEqual(era.source_date({"source": {"title": "x", "date": "2020-07"}})[0], 2020 + 6 / 12)
        self.assertEqual(era.source_date({"date": 2019})[0], 2019.0)
        self.assertEqual(era.source_date(None), (None, None))

    def legacy_row(self, **over):
        """A 2021 paper filed under a group name that starts like NeMo 24.07's."""
        return row(**{"source_group": "nemo_2407_like_but_2021",
                      "source": {"title": "Roe et al., 'Training big GPTs on A100s' (arXiv:2106.00001)"},
                      "notes": "Megatron-LM code base.", "precision": "bf16",
                      "hardware": {"gpu": "H100 SXM 80GB", "num_gpus": 64},
                      "parallelism": {"tp": 8, "pp": 2, "dp": 4}, "recompute": None, **over})

    def test_old_source_with_new_looking_group_gets_legacy_behaviour(self):
        m = map_row(self.legacy_row(), REPO)
        self.assertEqual((flag(m, "--framework"), flag(m, "--attention")), ("megatron-legacy", "unfused"))
        for f in ("--sp", "--distributed-optimizer", "--tp-comm-overlap", "--grad-reduce-bytes", "--master-weights",
                  "--fused-loss"):
            self.assertIsNone(flag(m, f), f)
        self.assertIsNone(m.eff["stack"])
        # The same row from a 2024 source that names NeMo 24.07 gets NeMo's behaviour.
        m = map_row(self.legacy_row(source={"title": "NeMo 24.07 performance summary"}, notes=""), REPO)
        self.assertEqual((flag(m, "--framework"), flag(m, "--attention"), m.eff["stack"]), ("megatron", "flash", "nemo"))
        self.assertTrue(flag(m, "--sp") and flag(m, "--distributed-optimizer") and flag(m, "--tp-comm-overlap"))

    def test_named_software_before_its_era_falls_through(self):
        # A 2021 source naming NeMo (NeMo Megatron) is not given NeMo 24.x / Megatron-Core behaviour.
        sw = era.software({"source": {"title": "NeMo Megatron GPT, Oct 2021"}}, tp=8)
        self.assertEqual((sw.framework, sw.attention, sw.stack), ("megatron-legacy", "unfused", None))
        sw = era.software({"source": {"title": "Megatron-Core scaling, Jan 2025"}})
        self.assertEqual((sw.framework, sw.attention, sw.stack), ("megatron", "flash", "megatron-core"))
        sw = era.software({"source": {"title": "Megatron-LM GPT runs, 2024"}})
        self.assertEqual((sw.framework, sw.attention), ("megatron", None))   # kernel not named: planner default
        sw = era.software({"source": {"title": "Megatron-DeepSpeed BLOOM, 2023"}, "notes": "flash-attn v2"})
        self.assertEqual((sw.framework, sw.attention), ("deepspeed", "flash"))

    def test_unknown_groups(self):
        # Nothing named, a date after FlashAttention, no model parallelism: both flags omitted.
        sw = era.software({"source": {"title": "Some lab blog (2024)"}}, tp=1, pp=1)
        self.assertEqual((sw.framework, sw.attention, sw.stack), (None, None, None))
        # Nothing named, before FlashAttention, tensor parallel: Megatron-LM style of its day, unfused.
        sw = era.software({"source": {"title": "Some lab blog (2021)"}}, tp=4)
        self.assertEqual((sw.framework, sw.attention), ("megatron-legacy", "unfused"))
        # No date at all: nothing assumed.
        sw = era.software({"source": {"title": "Some lab blog"}}, tp=4)
        self.assertEqual((sw.framework, sw.attention), (None, None))
        # A source that says it did not use FlashAttention.
        sw = era.software({"source": {"title": "FSDP runs, 2023"}, "notes": "run without FlashAttention"})
        self.assertEqual((sw.framework, sw.attention), ("fsdp", None))
        # FlashAttention named: flash even when the group name looks old.
        m = map_row(row(source_group="megatron_sc21_table1_rerun",
                        source={"title": "GPT weak scaling re-run with FlashAttention-2 (2024)"},
                        hardware__gpu="H100 SXM 80GB"), REPO)
        self.assertEqual(flag(m, "--attention"), "flash")
        self.assertEqual(flag(m, "--framework"), "megatron")   # tp 2, nothing named, dated 2024


class Ranking(unittest.TestCase):
    def test_tau_one_discordant_pair(self):
        # 4 rows, 6 pairs; only the pair (row 2, row 3) is ordered differently:
        # C = 5, D = 1, no ties: tau = (5 - 1) / 6 = 0.667
        self.assertAlmostEqual(ranking.kendall_tau_b([1, 2, 3, 4], [10, 20, 40, 30]), 4 / 6)
        self.assertAlmostEqual(ranking.kendall_tau_b([1, 2, 3], [3, 2, 1]), -1.0)
        self.assertAlmostEqual(ranking.kendall_tau_b([1, 2, 3], [1, 2, 3]), 1.0)

    def test_tau_b_ties(self):
        # x = [1, 1, 2], y = [1, 2, 3]: pairs (0,1) tied in x; (0,2) and (1,2) concordant.
        # C = 2, D = 0, P = 3, Tx = 1, Ty = 0: tau_b = 2 / sqrt(2 x 3) = 0.8165
        self.assertAlmostEqual(ranking.kendall_tau_b([1, 1, 2], [1, 2, 3]), 2 / 6 ** 0.5)
        # ties on both sides, in the same pair: x = [1, 1, 2, 3], y = [5, 5, 6, 4]
        # pairs: (0,1) tied both; (0,2) C; (0,3) D; (1,2) C; (1,3) D; (2,3) D.
        # C = 2, D = 3, P = 6, Tx = Ty = 1: tau_b = -1 / 5 = -0.2
        self.assertAlmostEqual(ranking.kendall_tau_b([1, 1, 2, 3], [5, 5, 6, 4]), -0.2)
        self.assertIsNone(ranking.kendall_tau_b([1, 1, 1], [1, 2, 3]))   # all tied in x
        self.assertIsNone(ranking.kendall_tau_b([1], [2]))

    def test_regret(self):
        # predicted best = row 1 (measured 12); measured best = row 0 (10): 20 %
        regret, picked, best = ranking.top1_regret_pct([2.0, 1.0, 3.0], [10.0, 12.0, 11.0])
        self.assertAlmostEqual(regret, 20.0)
        self.assertEqual((picked, best), (1, 0))
        # right pick: 0 %
        self.assertEqual(ranking.top1_regret_pct([1.0, 2.0], [5.0, 6.0])[0], 0.0)
        # rows 0 and 2 tie for the predicted best: the slower measured (row 2, 15) counts: 50 %
        self.assertAlmostEqual(ranking.top1_regret_pct([1.0, 2.0, 1.0], [10.0, 11.0, 15.0])[0], 50.0)

    def test_sets_and_summary(self):
        def res(i, key, pred, meas, outcome="compared", n=64):
            return {"id": f"r{i}", "group": "g", "outcome": outcome, "rank_set": key, "predicted_s": pred,
                    "measured_s": meas, "num_gpus": n,
                    "error_pct": None if meas is None else stats.error_pct(pred, meas)}
        rs = [res(0, "A", 1.0, 10.0), res(1, "A", 2.0, 20.0), res(2, "A", 3.0, 40.0), res(3, "A", 4.0, 30.0),
              res(4, "B", 1.0, 1.0), res(5, "B", 2.0, 2.0),                     # only 2 rows: no set
              res(6, "C", 3.0, 1.0, n=1024), res(7, "C", 2.0, 2.0, n=1024), res(8, "C", 1.0, 3.0, n=1024),
              res(9, "C", 0.5, None, "failed"), res(10, None, 1.0, 1.0, n=8)]
        rk = ranking.ranking_summary(rs)
        self.assertEqual([x["set"] for x in rk["sets"]], ["A", "C"])
        a, c = rk["sets"]
        self.assertAlmostEqual(a["kendall_tau"], 4 / 6)
        self.assertEqual((a["top1_regret_pct"], a["predicted_best"], a["measured_best"]), (0.0, "r0", "r0"))
        self.assertAlmostEqual(c["kendall_tau"], -1.0)
        self.assertAlmostEqual(c["top1_regret_pct"], 200.0)                  # picks r8 (3.0) over r6 (1.0)
        self.assertAlmostEqual(rk["mean_kendall_tau"], (4 / 6 - 1) / 2)
        self.assertEqual((rk["worst_top1_regret_pct"], rk["worst_top1_regret_set"]), (200.0, "C"))
        self.assertEqual((rk["set_count"], rk["rows_in_sets"]), (2, 7))
        self.assertEqual((a["repeated_layouts"], a["repeat_spread_pct"]), (0, None))  # no `plan` text
        b = {x["bucket"]: x for x in ranking.scale_buckets(rs)}
        self.assertEqual([x["bucket"] for x in ranking.scale_buckets(rs)], ["1-8", "9-64", "65-512", ">512"])
        self.assertEqual((b["1-8"]["rows"], b["9-64"]["rows"], b["65-512"]["rows"], b[">512"]["rows"]), (1, 6, 0, 3))
        # >512: errors (3-1)/1 = +200 %, 0 %, (1-3)/3 = -66.7 %: signed mean +44.4 %, |mean| 88.9 %
        self.assertAlmostEqual(b[">512"]["mean_signed_error_pct"], (200 - 200 / 3) / 3)
        self.assertAlmostEqual(b[">512"]["mean_abs_error_pct"], (200 + 200 / 3) / 3)
        self.assertIsNone(b["65-512"]["mean_signed_error_pct"])
        self.assertEqual(ranking.bucket_of(8), "1-8")
        self.assertEqual(ranking.bucket_of(9), "9-64")
        self.assertEqual(ranking.bucket_of(512), "65-512")
        self.assertEqual(ranking.bucket_of(513), ">512")

    def test_repeat_spread(self):
        # Layout X ran three times (10, 11, 12 s: spread 20 %), Y twice (5,
        # 5.5: 10 %), Z once: two repeated layouts, largest spread 20 %.
        rows = [{"plan": p, "measured_s": m} for p, m in
                (("X", 10.0), ("Y", 5.0), ("X", 12.0), ("Z", 7.0), ("X", 11.0), ("Y", 5.5))]
        n, spread = ranking.repeat_spread(rows)
        self.assertEqual(n, 2)
        self.assertAlmostEqual(spread, 20.0)
        self.assertEqual(ranking.repeat_spread([{"plan": "X", "measured_s": 1.0}]), (0, None))

    def test_repeat_sigma(self):
        # Set S, layout X ran at 9, 11 s (mean 10: deviations -0.1, +0.1), layout
        # Y at 4, 6 s (mean 5: -0.2, +0.2); set T's X ran once, a different layout
        # from S's X. Pooled: sqrt((0.01 + 0.01 + 0.04 + 0.04) / (1 + 1)) = sqrt(0.05).
        rows = [{"rank_set": k, "plan": p, "measured_s": m} for k, p, m in
                (("S", "X", 9.0), ("S", "Y", 4.0), ("S", "X", 11.0), ("S", "Y", 6.0), ("T", "X", 50.0))]
        sigma, dof = ranking.repeat_sigma(rows)
        self.assertAlmostEqual(sigma, 0.05 ** 0.5)
        self.assertEqual(dof, 2)
        self.assertEqual(ranking.repeat_sigma(rows[:2] + rows[4:]), (None, 0))

    def test_noise_ceiling(self):
        # No noise: the perfect predictor orders every draw right.
        self.assertEqual(ranking.noise_ceiling([1.0, 2.0, 3.0], 0.0, draws=10), (1.0, 0.0))
        # Layouts 1 % apart under 30 % noise: their order is nearly a coin toss,
        # so the expected tau is near 0 and the regret is positive.
        tau, regret = ranking.noise_ceiling([1.0, 1.01, 1.02], 0.3)
        self.assertLess(abs(tau), 0.1)
        self.assertGreater(regret, 0.0)
        # Seeded: the same figures on every call (the report is deterministic).
        self.assertEqual(ranking.noise_ceiling([1.0, 1.2, 1.5], 0.05), ranking.noise_ceiling([1.0, 1.2, 1.5], 0.05))
        # Layouts far apart under little noise: close to 1.
        self.assertGreater(ranking.noise_ceiling([1.0, 2.0, 4.0], 0.01)[0], 0.99)

    def test_set_noise_ceiling(self):
        # Set A (3 layouts; L1 measured twice at 10 and 12 s): sigma from L1's
        # repeats, sqrt(((10/11 - 1)^2 + (12/11 - 1)^2) / 1) = 0.1286; the ceiling
        # uses L1's mean, 11 s, for both of its rows.
        def res(i, plan, pred, meas):
            return {"id": f"r{i}", "group": "g", "outcome": "compared", "rank_set": "A", "plan": plan,
                    "predicted_s": pred, "measured_s": meas, "num_gpus": 8, "error_pct": 0.0}
        rs = [res(0, "L1", 1.0, 10.0), res(1, "L1", 1.0, 12.0), res(2, "L2", 2.0, 20.0), res(3, "L3", 3.0, 30.0)]
        s = ranking.ranking_sets(rs)[0]
        self.assertAlmostEqual(s["noise_sigma_pct"], 100 * (2 * (1 / 11) ** 2) ** 0.5)
        self.assertEqual((s["noise_ceiling_tau"], s["noise_ceiling_regret_pct"]),
                         ranking.noise_ceiling([11.0, 11.0, 20.0, 30.0], s["noise_sigma_pct"] / 100))
        rk = ranking.ranking_summary(rs)
        self.assertEqual(rk["mean_noise_ceiling_tau"], s["noise_ceiling_tau"])
        # Without repeats there is no ceiling.
        s = ranking.ranking_sets([res(0, "L1", 1.0, 10.0), res(2, "L2", 2.0, 20.0), res(3, "L3", 3.0, 30.0)])[0]
        self.assertIsNone(s["noise_ceiling_tau"])

    def test_rank_set_key_ignores_layout(self):
        a = map_row(row(), REPO)
        b = map_row(row(parallelism={"tp": 4, "pp": 2, "dp": 8}, training__micro_batch_size=2), REPO)
        c = map_row(row(training__global_batch_size=1024), REPO)
        self.assertEqual(mapping.rank_set("g", a.eff), mapping.rank_set("g", b.eff))
        self.assertNotEqual(mapping.rank_set("g", a.eff), mapping.rank_set("g", c.eff))
        self.assertNotIn("-b", a.eff["model_key"].split("-s2048")[1])


FAKE_PLANNER = textwrap.dedent("""\
    #!/usr/bin/env python3
    # Fake planner for the harness tests: step time = global batch x 0.01 s,
    # peak = 10 GB per micro-batch sample, fits when micro-batch < 8.
    import json, sys
    a = sys.argv[1:]
    if a == ["--version"]:
        print("planner 0.0-fake"); sys.exit(0)
    if a[:2] in (["estimate", "--help"], ["search", "--help"]):
        print(f"Usage: planner {a[0]} [OPTIONS] model"); sys.exit(0)
    def val(name):
        return a[a.index(name) + 1]
    if a[0] == "model":
        if "--layers" in a and val("--layers") == "13":
            print("planner model: error: unlucky", file=sys.stderr); sys.exit(2)
        open(val("-o"), "w").write("onnx")
        sys.exit(0)
    if a[0] == "estimate":
        open(a[1]).read()
        b = int(val("--micro-batch"))
        lay = {k: int(val("--" + k)) for k in ("tp", "pp", "dp")}
        lay.update(micro_batch=b, schedule="1f1b", sequence_parallel="--sp" in a)
        print(json.dumps({"step_time_s": int(val("--global-batch")) * 0.01,
                          "memory": {"fits": b < 8, "peak_bytes": b * 10e9},
                          "layout": lay, "training": {"recompute": val("--recompute")}}))
        sys.exit(0)
    if a[0] == "search":
        # Global batch 512: 0.005 s per sample (better than estimate); 1024:
        # 0.02 (worse); 2048: no layout fits. A plan file is written.
        open(a[1]).read()
        gb = int(val("--global-batch"))
        if gb == 2048:
            print("planner search: error: no layout fits in memory (smallest needs 99 GB)", file=sys.stderr)
            sys.exit(1)
        assert "--tp" not in a and "--recompute" not in a and val("--threads") == "1"
        step = gb * (0.02 if gb == 1024 else 0.005)
        lay = {"dp": 8, "tp": 8, "pp": 1, "cp": 1, "ep": 1, "vp": 1, "sequence_parallel": True, "zero": 0,
               "distributed_optimizer": True, "tp_splits_batch": False, "schedule": "1f1b"}
        plan = {"layout": lay, "training": {"micro_batch": 16, "recompute": "none"},
                "prediction": {"fits": True, "stages": [{"stage": 0, "peak_bytes": 50e9, "fits": True}]}}
        open(val("-o"), "w").write(json.dumps(plan))
        print(json.dumps({"format": "planner.search/v1", "plan_file": val("-o"), "layout": "dp=8 tp=8 ...",
                          "step_time_s": step, "peak_memory_bytes": 50e9, "capacity_bytes": 80e9,
                          "complete": True, "layouts": {"enumerated": 3, "scored": 3}, "search_time_s": 0.1,
                          "lower_bound_s": step, "alternatives": [],
                          "space": {"tp": [1, 2, 4, 8], "cp": [1], "pp": [1], "dp": [1, 2, 4, 8, 16, 32, 64],
                                    "ep": [1], "pp_vp": [[1, 1]], "schedules": ["1f1b"],
                                    "sequence_parallel_with_tp": [True],
                                    "state_sharding": [{"zero": 0, "distributed_optimizer": False},
                                                       {"zero": 0, "distributed_optimizer": True}]}}))
        sys.exit(0)
    sys.exit(2)
    """)


class EndToEnd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.planner = os.path.join(cls.tmp.name, "planner")
        with open(cls.planner, "w") as f:
            f.write(FAKE_PLANNER)
        os.chmod(cls.planner, 0o755)
        rows = []
        for i in range(6):  # 512 x 0.01 = 5.12 s predicted
            rows.append(row(id=f"r{i}", derived={"iteration_time_s": 4.0 + i}))
        rows.append(row(id="oom", status="OOM", training={"global_batch_size": 512, "micro_batch_size": 8},
                        measured={"peak_memory_gb": 100}))
        rows.append(row(id="bad-model", model__layers=13, model__heads=32))
        rows.append(row(id="skip-me", hardware__gpu="TPU v4"))
        rows.append(row(id="other-group", source_group="elsewhere", derived={"iteration_time_s": 5.12}))
        rows.append(42)
        cls.runs = os.path.join(cls.tmp.name, "runs.json")
        with open(cls.runs, "w") as f:
            json.dump({"runs": rows}, f)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, cwd=REPO)

    def test_json_run_in_file_order(self):
        p = self.run_script(self.runs, "--planner", self.planner, "--json", "--jobs", "4")
        self.assertEqual(p.returncode, 0, p.stderr)
        d = json.loads(p.stdout)
        self.assertEqual([r["id"] for r in d["rows"]],
                         [f"r{i}" for i in range(6)] + ["oom", "bad-model", "skip-me", "other-group", "#10"])
        r0 = d["rows"][0]
        self.assertEqual(r0["outcome"], "compared")
        self.assertAlmostEqual(r0["error_pct"], (5.12 - 4.0) / 4.0 * 100)
        oom = d["rows"][6]
        self.assertEqual((oom["outcome"], oom["fits"]), ("oom_checked", False))
        self.assertAlmostEqual(oom["memory_error_pct"], -20.0)  # 80 GB predicted vs 100
        self.assertEqual(d["rows"][7]["outcome"], "failed")
        self.assertIn("unlucky", d["rows"][7]["reason"])
        self.assertEqual(d["rows"][8]["outcome"], "skipped")
        s = d["summary"]["overall"]
        self.assertEqual((s["oom_rows"], s["oom_agree"], s["time_compared"]), (1, 1, 7))
        self.assertEqual(d["summary"]["groups"]["elsewhere"]["mean_abs_error_pct"], 0.0)
        # r0..r5 form one ranking set; the fake predicts 5.12 s for all (tau undefined) and
        # the slowest of the tied rows (r5, 9 s) counts against the best (r0, 4 s): +125 %
        rk = d["summary"]["ranking"]
        self.assertEqual(rk["set_count"], 1)
        self.assertEqual(rk["sets"][0]["ids"], [f"r{i}" for i in range(6)])
        self.assertIsNone(rk["sets"][0]["kendall_tau"])
        self.assertAlmostEqual(rk["worst_top1_regret_pct"], 125.0)
        b = {x["bucket"]: x["rows"] for x in d["summary"]["scale_buckets"]}
        self.assertEqual(b["9-64"], 7)
        self.assertEqual(d["rows"][0]["num_gpus"], 64)

    def test_text_group_and_doc(self):
        doc = os.path.join(self.tmp.name, "v.md")
        p = self.run_script(self.runs, "--planner", self.planner, "--group", "elsewhere", "--write-doc", doc)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("other-group", p.stdout)
        self.assertNotIn("r0 ", p.stdout)
        with open(doc, encoding="utf-8") as f:
            text = f.read()
        self.assertIn("## How a row becomes commands", text)
        self.assertIn("--group elsewhere", text)
        self.assertIn("## Ranking", text)
        self.assertIn("Signed mean error by GPU count", text)
        p = self.run_script(self.runs, "--planner", self.planner)
        self.assertIn("Ranking: 1 sets of >= 3 rows (6 rows)", p.stdout)
        self.assertIn("125.0%", p.stdout)
        p = self.run_script(self.runs, "--planner", self.planner, "--write-doc", doc)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--force", p.stderr)
        p = self.run_script(self.runs, "--planner", self.planner, "--write-doc", doc, "--force")
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_dry_run_runs_nothing(self):
        p = self.run_script(self.runs, "--planner", "/nonexistent/planner", "--dry-run")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("/nonexistent/planner estimate MODELS/gpt-l30-h3072", p.stdout)
        self.assertIn("SKIP: unknown hardware", p.stdout)

    def test_bad_input_exit_2_one_line(self):
        bad = os.path.join(self.tmp.name, "bad.json")
        with open(bad, "w") as f:
            f.write("{not json")
        for args in ([bad], [os.path.join(self.tmp.name, "missing.json")], [self.runs, "--jobs", "0"], [],
                     [self.runs, "--planner", "/nonexistent/planner"]):
            p = self.run_script(*args)
            self.assertEqual(p.returncode, 2, args)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertNotIn("Traceback", p.stderr)
        self.assertIn("bad.json", self.run_script(bad).stderr)


class SearchMapping(unittest.TestCase):
    LAYOUT = set(search_check.LAYOUT_VALUE_FLAGS) | set(search_check.LAYOUT_BARE_FLAGS) | {"--json"}

    def rows(self):
        return [
            row(),                                                     # SC'21 Table 1: tp2, full recompute
            row(parallelism={"tp": 8, "pp": 8, "dp": 24, "virtual_pipeline_stages": 2, "sequence_parallel": True,
                             "distributed_optimizer": True, "cp": 1},
                hardware__num_gpus=1536, recompute="selective", training={"global_batch_size": 2304,
                                                                           "micro_batch_size": 2}),
            row(parallelism={"tp": 4, "pp": 2, "dp": 4, "cp": 2, "ep": 2}, hardware__num_gpus=64,
                hardware__gpu="H100 SXM 80GB", precision="fp8", **src("nemo_2407_h100_fp8"),
                training={"global_batch_size": 128, "micro_batch_size": 1}),
            row(parallelism={"tp": 1, "pp": 1, "dp": 64, "zero_stage": 3, "fsdp": "FULL_SHARD PURE"},
                training={"global_batch_size": 512, "micro_batch_size": 8}, **src("mosaicml_llm_foundry"),
                hardware__gpus_per_node=4),
        ]

    def pairs(self, args):
        """[(flag, value or None)] of an argument list."""
        out, i = [], 0
        while i < len(args):
            if i + 1 < len(args) and not args[i + 1].startswith("--"):
                out.append((args[i], args[i + 1]))
                i += 2
            else:
                out.append((args[i], None))
                i += 1
        return out

    def test_drops_exactly_the_layout_flags(self):
        for r in self.rows():
            m = map_row(r, REPO)
            sargs, notes = search_check.search_args(m.estimate_args, m.eff["stack"])
            tail = ["--threads", "1", "--time-limit", "60", "--json"]
            self.assertEqual(sargs[-5:], tail)
            kept = [p for p in self.pairs(m.estimate_args) if p[0] not in self.LAYOUT]
            extra = [("--tp-comm-overlap", None)] if notes else []
            self.assertEqual(self.pairs(sargs[:-5]), kept + extra, r["id"])
            dropped = {f for f, _ in self.pairs(m.estimate_args)} - {f for f, _ in kept}
            self.assertTrue(dropped <= self.LAYOUT)
            for f in ("--tp", "--pp", "--dp", "--micro-batch", "--recompute"):
                self.assertIn(f, m.estimate_args)
                self.assertNotIn(f, sargs)
        # Spot checks of what is kept.
        nemo = map_row(self.rows()[2], REPO)
        sargs, notes = search_check.search_args(nemo.estimate_args, "nemo")
        self.assertEqual(notes, [])  # tp 4 with sp: the estimate already has --tp-comm-overlap
        for f in ("--cp", "--ep", "--sp", "--distributed-optimizer"):
            self.assertIn(f, nemo.estimate_args)
            self.assertNotIn(f, sargs)
        self.assertEqual(search_check.flag_value(sargs, "--precision"), "fp8")
        self.assertIn("--tp-comm-overlap", sargs)
        foundry = map_row(self.rows()[3], REPO)
        sargs, _ = search_check.search_args(foundry.estimate_args, "llm-foundry")
        self.assertIn("--fused-loss", sargs)
        self.assertEqual(search_check.flag_value(sargs, "--grad-reduce-bytes"), "2")
        self.assertEqual(search_check.flag_value(sargs, "--gpus-per-node"), "4")
        self.assertEqual(search_check.flag_value(sargs, "--framework"), "fsdp")
        self.assertNotIn("--zero", sargs)

    def test_overlap_group_with_tp1_and_unknown_flag(self):
        r = row(parallelism={"tp": 1, "pp": 1, "dp": 8}, hardware__num_gpus=8, **src("nemo_2407_h100_fp8"),
                hardware__gpu="H100 SXM 80GB", training={"global_batch_size": 128, "micro_batch_size": 1})
        m = map_row(r, REPO)
        self.assertNotIn("--tp-comm-overlap", m.estimate_args)
        self.assertEqual(m.eff["stack"], "nemo")
        sargs, notes = search_check.search_args(m.estimate_args, m.eff["stack"])
        self.assertIn("--tp-comm-overlap", sargs)
        self.assertEqual(len(notes), 1)
        with self.assertRaises(ValueError):
            search_check.search_args(["--devices", "8", "--new-flag", "3"])

    def test_prepare_commands(self):
        rs = [row(id="a"), row(id="b/c", status="OOM"), row(id="d", hardware__gpu="TPU v4")]
        results, models = search_check.prepare(rs, REPO, "PL", "M", "M/plans")
        a, b, d = results
        self.assertEqual(a["outcome"], "mapped")
        path = a["estimate_command"][2]
        self.assertEqual(a["search_command"][:3], ["PL", "search", path])
        self.assertEqual(a["search_command"][-3:], ["-o", "M/plans/000-a.plan.json", "--force"])
        self.assertEqual(list(models), [path])
        self.assertEqual((b["outcome"], d["outcome"]), ("skipped", "skipped"))
        self.assertIn("OOM", b["reason"])
        self.assertEqual(search_check.plan_name(7, "x/y z"), "007-x_y_z.plan.json")

    def test_space_gaps(self):
        # The gaps come from the search's own `space` report (search::space_ranges).
        G = search_check.space_gaps
        space = {"tp": [1, 2, 4, 8], "cp": [1, 2, 4, 8, 16, 32, 64], "pp": [1, 2, 4], "dp": [1, 2, 4, 8],
                 "ep": [1], "pp_vp": [[1, 1], [2, 1], [2, 2], [4, 1], [4, 2], [4, 4]],
                 "schedules": ["1f1b", "interleaved"], "sequence_parallel_with_tp": [True],
                 "state_sharding": [{"zero": 0, "distributed_optimizer": False},
                                    {"zero": 0, "distributed_optimizer": True}]}
        base = {"tp": 8, "pp": 4, "dp": 2, "cp": 1, "ep": 1, "vp": 1, "sequence_parallel": True, "zero": 0,
                "distributed_optimizer": True, "schedule": "1f1b"}
        self.assertEqual(G(base, space), [])
        self.assertEqual(G(base, None), [])  # no report: nothing claimed
        self.assertEqual(G(dict(base, cp=32), space), [])  # cp 32 is enumerated now
        self.assertEqual(G(dict(base, cp=128), space), ["cp=128 (the search enumerated cp in 1, 2, 4, 8, 16, 32, 64)"])
        self.assertEqual(len(G(dict(base, cp=128, ep=4), space)), 2)
        self.assertEqual(G(dict(base, vp=4, schedule="interleaved"), space), [])
        self.assertEqual(G(dict(base, vp=3, schedule="interleaved"), space),
                         ["vp=3 with pp=4 (the search enumerated vp in 2, 4 for pp=4)"])
        self.assertIn("gpipe", G(dict(base, schedule="gpipe"), space)[0])
        self.assertIn("no sequence parallelism", G(dict(base, sequence_parallel=False), space)[0])
        self.assertEqual(G(dict(base, distributed_optimizer=False, zero=1), space),
                         ["ZeRO-1 (the search enumerated ZeRO-0, distributed optimizer)"])
        self.assertEqual(G(dict(base, tp=16), space), ["tp=16 (the search enumerated tp in 1, 2, 4, 8)"])


class SearchArithmetic(unittest.TestCase):
    def res(self, i, pub, srch, pub_fits=True, srch_fits=True, wall=1.0, complete=True, outcome="compared",
            err=None):
        r = search_check.new_result(i, {"id": f"r{i}", "source_group": "g", "status": "ok"})
        r.update(outcome=outcome, published_s=pub, search_s=srch, published_fits=pub_fits, search_fits=srch_fits,
                 search_wall_s=wall, search_complete=complete, search_error=err)
        if outcome == "compared":
            r["ratio"] = srch / pub
            r["verdict"] = search_check.verdict(r)
        return r

    def test_verdicts(self):
        self.assertEqual(self.res(1, 2.0, 2.0 * (1 + 5e-10))["verdict"], "no_worse")   # inside the 1e-9 slack
        self.assertEqual(self.res(1, 2.0, 2.0 * (1 + 1e-8))["verdict"], "worse")
        self.assertEqual(self.res(1, 2.0, 3.0, pub_fits=False)["verdict"], "published_unfit")
        self.assertEqual(self.res(1, 2.0, 1.0, srch_fits=False)["verdict"], "search_unfit")
        self.assertEqual(self.res(1, 2.0, 1.0, pub_fits=None)["verdict"], "no_worse")

    def test_summary(self):
        rs = [self.res(0, 2.0, 1.0, wall=3.0),                     # ratio 0.5
              self.res(1, 4.0, 4.0, wall=1.0),                     # ratio 1.0
              self.res(2, 1.0, 1.25, wall=10.0, complete=False),   # ratio 1.25: worse, stopped at the limit
              self.res(3, 1.0, 2.0, pub_fits=False, wall=2.0),     # published does not fit: counts as no worse
              self.res(4, 1.0, 0.5, srch_fits=False, wall=4.0),    # searched plan does not fit
              self.res(5, None, None, outcome="search_failed", wall=5.0, err="no layout fits"),
              self.res(6, None, None, outcome="skipped", wall=None)]
        s = search_check.summarize(rs)
        self.assertEqual((s["rows"], s["compared"], s["skipped"], s["failed"]), (7, 5, 1, 0))
        self.assertEqual((s["no_worse"], s["no_worse_by_time"]), (3, 2))  # r0, r1 + r3
        self.assertEqual(s["worse"], ["r2"])
        self.assertEqual(s["worst"], {"id": "r2", "ratio": 1.25})
        # geometric mean over published-fitting, fitting-search rows: (0.5 x 1.0 x 1.25)^(1/3) = 0.625^(1/3)
        self.assertAlmostEqual(s["ratio_geomean"], 0.625 ** (1 / 3))
        self.assertEqual(s["search_failed"], [{"id": "r5", "message": "no layout fits"}])
        self.assertEqual((s["published_unfit"], s["search_unfit"], s["incomplete"]), (["r3"], ["r4"], ["r2"]))
        # walls 3, 1, 10, 2, 4, 5 -> sorted 1 2 3 4 5 10: median (3 + 4) / 2
        self.assertEqual(s["search_wall_s_median"], 3.5)
        self.assertEqual((s["search_wall_s_max"], s["search_wall_s_max_id"]), (10.0, "r2"))
        self.assertFalse(s["requirement_met"])
        ok = search_check.summarize([self.res(0, 2.0, 1.0), self.res(3, 1.0, 2.0, pub_fits=False)])
        self.assertTrue(ok["requirement_met"])
        self.assertEqual(ok["worst"], {"id": "r0", "ratio": 0.5})
        self.assertFalse(search_check.summarize([])["requirement_met"])

    def test_short_layout(self):
        lay = {"tp": 8, "pp": 4, "dp": 2, "cp": 1, "ep": 1, "vp": 3, "sequence_parallel": True,
               "micro_batch": 2, "schedule": "interleaved", "zero": 0, "distributed_optimizer": True}
        self.assertEqual(search_check.short_layout(lay, "full"), "tp8 pp4 dp2 vp3 sp mb2 interleaved distopt rc-full")
        self.assertEqual(search_check.short_layout(dict(lay, distributed_optimizer=False, zero=3, cp=2, vp=1,
                                                        sequence_parallel=False, schedule="1f1b"), "none"),
                         "tp8 pp4 dp2 cp2 mb2 1f1b zero3 rc-none")


class SearchEndToEnd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.planner = os.path.join(cls.tmp.name, "planner")
        with open(cls.planner, "w") as f:
            f.write(FAKE_PLANNER)
        os.chmod(cls.planner, 0o755)
        tr = lambda gb: {"global_batch_size": gb, "micro_batch_size": 4}  # the fake estimate fits below 8
        rows = [row(id="better", training=tr(512)),                            # 2.56 s vs 5.12 s
                row(id="worse", training=tr(1024)),                            # 20.48 s vs 10.24 s
                row(id="no-plan", training=tr(2048)),
                row(id="oom", status="OOM"),
                row(id="bad-model", model__layers=13, model__heads=32),
                row(id="no-measure", training=tr(512), derived=None,
                    measured={"other": {"forward_ms": 3}}),                    # searched all the same
                row(id="unfit", training={"global_batch_size": 512, "micro_batch_size": 8})]
        cls.runs = os.path.join(cls.tmp.name, "runs.json")
        with open(cls.runs, "w") as f:
            json.dump({"runs": rows}, f)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, cwd=REPO)

    def test_json(self):
        keep = os.path.join(self.tmp.name, "keep")
        p = self.run_script(self.runs, "--search", "--planner", self.planner, "--json", "--keep-models", keep,
                            "--jobs", "8")
        self.assertEqual(p.returncode, 0, p.stderr)
        d = json.loads(p.stdout)
        self.assertEqual(d["mode"], "search")
        rows = {r["id"]: r for r in d["rows"]}
        b = rows["better"]
        self.assertEqual((b["outcome"], b["verdict"], b["search_fits"]), ("compared", "no_worse", True))
        self.assertAlmostEqual(b["ratio"], 0.5)
        self.assertEqual(b["search_layout"], "tp8 pp1 dp8 sp mb16 1f1b distopt rc-none")
        self.assertEqual(b["published_layout"], "tp2 pp1 dp32 mb4 1f1b rc-full")
        self.assertEqual(b["gaps"], ["no sequence parallelism with tp > 1 (the search enumerated sp True)"])
        self.assertTrue(os.path.isfile(b["plan_file"]))
        self.assertTrue(b["plan_file"].startswith(os.path.join(keep, "plans")))
        self.assertEqual(rows["worse"]["verdict"], "worse")
        self.assertEqual(rows["no-plan"]["outcome"], "search_failed")
        self.assertIn("no layout fits", rows["no-plan"]["reason"])
        self.assertEqual(rows["oom"]["outcome"], "skipped")
        self.assertEqual(rows["bad-model"]["outcome"], "failed")
        self.assertEqual(rows["no-measure"]["outcome"], "compared")
        self.assertEqual(rows["unfit"]["verdict"], "published_unfit")
        s = d["summary"]["overall"]
        self.assertEqual((s["compared"], s["no_worse"], s["worse"]), (4, 3, ["worse"]))
        self.assertEqual(s["published_unfit"], ["unfit"])
        self.assertEqual(s["worst"]["id"], "worse")
        self.assertAlmostEqual(s["worst"]["ratio"], 2.0)
        self.assertEqual(s["search_failed"], [{"id": "no-plan", "message": "no layout fits in memory (smallest "
                                                                              "needs 99 GB)"}])

    def test_text_doc_and_dry_run(self):
        doc = os.path.join(self.tmp.name, "s.md")
        p = self.run_script(self.runs, "--search", "--planner", self.planner, "--write-doc", doc, "--jobs", "8")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("Search worse or not fitting (1):", p.stdout)
        self.assertIn("no worse (search <= published", p.stdout)
        with open(doc, encoding="utf-8") as f:
            text = f.read()
        self.assertIn("--search", text.split("```")[1])
        self.assertIn("## Rows where the search is worse or its plan does not fit (1)", text)
        self.assertIn("no layout fits in memory", text)
        p = self.run_script(self.runs, "--search", "--planner", "/nonexistent/planner", "--dry-run")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("/nonexistent/planner search MODELS/gpt-l30-h3072", p.stdout)
        self.assertIn("--threads 1 --time-limit 60 --json -o MODELS/plans/000-better.plan.json --force", p.stdout)
        self.assertNotIn("MODELS/plans/003-oom", p.stdout)


class PublishedFile(unittest.TestCase):
    """Every row of the shared calibration file maps or skips with a reason."""
    PATH = os.path.join(os.path.dirname(REPO), "shared", "validation", "published_runs.json")

    @unittest.skipUnless(os.path.isfile(PATH), "shared/validation/published_runs.json not present")
    def test_all_rows(self):
        with open(self.PATH) as f:
            rows = json.load(f)["runs"]
        mapped = 0
        for r in rows:
            try:
                map_row(copy.deepcopy(r), REPO)
                mapped += 1
            except Skip as e:
                self.assertTrue(str(e))
        self.assertGreaterEqual(mapped, len(rows) - 10)


if __name__ == "__main__":
    unittest.main()
