"""Text, JSON and Markdown output of a validation run."""

import json
import shlex

from . import causes, era, stats, tables


def fmt_s(x):
    return "-" if x is None else f"{x:.4g}"


def fmt_pct(x, signed=True):
    if x is None:
        return "-"
    return f"{x:+.1f}%" if signed else f"{x:.1f}%"


def fits_text(r):
    f = r.get("fits")
    if r["status"] == "OOM":
        return "?" if f is None else ("no (agrees)" if f is False else "yes (OOM missed)")
    return "?" if f is None else ("yes" if f else "NO")


def shell(argv):
    return " ".join(shlex.quote(str(a)) for a in argv)


def measured_text(r):
    return "OOM" if r["status"] == "OOM" else fmt_s(r["measured_s"])


def group_line(name, s):
    worst = "-" if s["worst"] is None else f"{s['worst']['id']} ({fmt_pct(s['worst']['error_pct'])})"
    oom = "-" if not s["oom_rows"] else f"{s['oom_agree']}/{s['oom_rows']}"
    mem = "-" if not s["memory_rows"] else f"{fmt_pct(s['memory_mean_abs_error_pct'], False)} (n={s['memory_rows']})"
    return [name, f"{s['evaluated']}/{s['rows']}", fmt_pct(s["mean_abs_error_pct"], False),
            fmt_pct(s["p90_abs_error_pct"], False), worst, str(len(s["above_threshold"])), oom,
            str(len(s["fits_disagreements_ok_rows"])), mem]


SUMMARY_HEAD = ["group", "evaluated/rows", "mean |err|", "p90 |err|", "worst", ">20%", "OOM agree",
                "fits disagree (ok rows)", "memory mean |err|"]


def columns(rows, head):
    widths = [max(len(str(x[i])) for x in [head] + rows) for i in range(len(head))]
    return ["  ".join(str(c).ljust(w) for c, w in zip(x, widths)).rstrip() for x in [head] + rows]


BUCKET_HEAD = ["GPUs", "rows", "signed mean err", "mean |err|"]
SET_HEAD = ["set (group | model | profile x GPUs | global batch | precision)", "rows", "Kendall tau",
            "top-1 regret", "predicted best", "measured best", "repeated layouts (largest spread)",
            "noise ceiling: tau / regret (sigma)"]


def bucket_lines(s):
    return [[b["bucket"], str(b["rows"]), fmt_pct(b["mean_signed_error_pct"]),
             fmt_pct(b["mean_abs_error_pct"], False)] for b in s["scale_buckets"]]


def fmt_tau(x):
    return "-" if x is None else f"{x:.3f}"


def ranking_line(rk):
    if not rk["sets"]:
        return f"Ranking: no set of >= {rk['min_set_rows']} compared rows differing only in layout."
    return (f"Ranking: {rk['set_count']} sets of >= {rk['min_set_rows']} rows ({rk['rows_in_sets']} rows); "
            f"mean Kendall tau-b {fmt_tau(rk['mean_kendall_tau'])} (noise ceiling "
            f"{fmt_tau(rk.get('mean_noise_ceiling_tau'))}); worst top-1 regret "
            f"{fmt_pct(rk['worst_top1_regret_pct'], False)} ({rk['worst_top1_regret_set']})")


def set_lines(rk):
    return [[x["set"], str(x["rows"]), fmt_tau(x["kendall_tau"]), fmt_pct(x["top1_regret_pct"], False),
             x["predicted_best"], x["measured_best"],
             "-" if not x.get("repeated_layouts") else
             f"{x['repeated_layouts']} ({fmt_pct(x['repeat_spread_pct'], False)})",
             "-" if x.get("noise_ceiling_tau") is None else
             f"{fmt_tau(x['noise_ceiling_tau'])} / {fmt_pct(x['noise_ceiling_regret_pct'], False)} "
             f"({fmt_pct(x['noise_sigma_pct'], False)})"] for x in rk["sets"]]


XVAL_HEAD = ["group", "rows", "in-sample mean |err|", "in-sample p90", "held-out mean |err|", "held-out p90",
             "held-out signed mean", "fits refitted without the group"]


def refit_text(x):
    if not x["refits"]:
        return "none (no fit trained on it: held out = in sample)"
    out = []
    for f in x["refits"]:
        vals = ", ".join(f"{k} {v:g} (committed {f['committed'][k]:g})" for k, v in f["values"].items())
        how = (f"refit on {f['training_rows']} rows of {', '.join(f['trained_on'])}" if f["how"] == "refit"
               else "fallback")
        out.append(f"{f['fit']}: {how}: {vals}")
    return "; ".join(out)


def xval_lines(x, name=lambda g: g, overall="overall"):
    def line(label, v, refits):
        i, h = v["in_sample"], v["held_out"]
        return [label, str(v["rows"]), fmt_pct(i["mean_abs_error_pct"], False), fmt_pct(i["p90_abs_error_pct"], False),
                fmt_pct(h["mean_abs_error_pct"], False), fmt_pct(h["p90_abs_error_pct"], False),
                fmt_pct(h["mean_signed_error_pct"]), refits]
    return [line(overall, x["overall"], "")] + [line(name(g), v, refit_text(v)) for g, v in x["groups"].items()]


# ---------------------------------------------------------------------------
# Text.

def text_report(doc):
    out = [f"runs: {doc['runs_file']} ({doc['rows_in_file']} rows"
           + (f", group {doc['group']}: {len(doc['rows'])}" if doc["group"] else "") + ")",
           f"planner: {doc['planner'] or '(none)'}" + (f" ({doc['planner_version']})" if doc["planner_version"] else "")]
    done = [r for r in doc["rows"] if r["outcome"] in ("compared", "oom_checked")]
    table = [[r["id"], r["group"], measured_text(r), fmt_s(r["predicted_s"]), fmt_pct(r["error_pct"]),
              fits_text(r), fmt_pct(r["memory_error_pct"]), "; ".join(r["notes"])] for r in done]
    out += [""] + columns(table, ["id", "group", "measured_s", "predicted_s", "error", "fits", "mem_err", "notes"])
    for kind in ("skipped", "failed"):
        rs = [r for r in doc["rows"] if r["outcome"] == kind]
        if rs:
            out += ["", f"{kind.capitalize()} ({len(rs)}):"] + [f"  {r['id']}: {r['reason']}" for r in rs]
    s = doc["summary"]
    lines = [group_line("overall", s["overall"])] + [group_line(g, v) for g, v in s["groups"].items()]
    out += ["", "Summary:"] + columns(lines, SUMMARY_HEAD)
    if doc.get("cross_validation"):
        out += ["", "In sample and held out (leave one source group out; compared rows):"]
        out += columns(xval_lines(doc["cross_validation"]), XVAL_HEAD)
    out += ["", "Signed mean error by GPU count:"] + columns(bucket_lines(s), BUCKET_HEAD)
    rk = s["ranking"]
    out += ["", ranking_line(rk)]
    if rk["sets"]:
        out += columns(set_lines(rk), SET_HEAD)
    above = [r for r in done if r["error_pct"] is not None and abs(r["error_pct"]) > stats.THRESHOLD_PCT]
    if above:
        out += ["", f"Rows above {stats.THRESHOLD_PCT:g} %:"]
        out += [f"  {r['id']} ({r['group']}): {fmt_pct(r['error_pct'])}" for r in above]
    return "\n".join(out) + "\n"


def dry_run_report(doc):
    out = [f"# runs: {doc['runs_file']}; commands run from the repository root; "
           f"MODELS = {doc['models_dir']}"]
    reasons = {}
    for r in doc["rows"]:
        out.append(f"# {r['id']} ({r['group']}, {r['status']})")
        if r["outcome"] == "skipped":
            out.append(f"#   SKIP: {r['reason']}")
            key = r["reason"].split(":")[0]
            reasons[key] = reasons.get(key, 0) + 1
            continue
        out.append(shell(r["model_command"]))
        out.append(shell(r["estimate_command"]))
        if r["measured_s"] is not None:
            out.append(f"#   measured {fmt_s(r['measured_s'])} s from {r['measured_method']}")
        out += [f"#   note: {n}" for n in r["notes"]]
    mapped = sum(1 for r in doc["rows"] if r["outcome"] != "skipped")
    out.append(f"# {mapped} rows mapped, {len(doc['rows']) - mapped} skipped, "
               f"{len({tuple(r['model_command']) for r in doc['rows'] if r['model_command']})} distinct models")
    out += [f"#   skipped {n}: {why}" for why, n in sorted(reasons.items(), key=lambda x: -x[1])]
    return "\n".join(out) + "\n"


def json_report(doc):
    return json.dumps(doc, indent=1, sort_keys=False) + "\n"


JSON_FIELDS = [
    ("runs_file, rows_in_file, group", "the input file as given, its row count, the --group filter (null: all)"),
    ("planner, planner_version", "the binary used and its `--version` line"),
    ("dry_run, models_dir", "whether --dry-run was given; the --keep-models folder (`MODELS` in a dry run, "
     "null when the models went to a removed temporary folder)"),
    ("rows[]", "one object per row of the file (after --group), in file order:"),
    ("  id, group, status", "the row's id (`#N` when absent), source_group, status (ok / OOM)"),
    ("  outcome", "`compared` (time compared), `oom_checked` (OOM row, fit checked), `skipped` (not mapped "
     "or no measurement; see reason), `failed` (planner error; see reason); `mapped` in --dry-run"),
    ("  reason", "one line, for skipped and failed rows"),
    ("  notes[]", "every assumption and approximation made for the row"),
    ("  plan", "compact layout summary (tp/pp/dp, vp, sp, batches, ZeRO, recompute, precision, attention, "
     "framework, @profile)"),
    ("  model_command, estimate_command", "argv lists of the two planner calls"),
    ("  measured_s, measured_method", "measured seconds per optimizer step and how it was obtained"),
    ("  predicted_s", "`step_time_s` of the estimate JSON"),
    ("  error_pct", "(predicted - measured) / measured x 100, signed"),
    ("  fits", "`memory.fits` of the estimate JSON (null when absent)"),
    ("  memory_measured_gb, memory_predicted_gb, memory_error_pct",
     "measured.peak_memory_gb, memory.peak_bytes / 1e9, and their signed error"),
    ("  num_gpus, rank_set", "GPU count and ranking-set key; null for rows not mapped"),
    ("summary.overall, summary.groups.G", "rows, evaluated (compared + oom_checked), time_compared, skipped, "
     "failed, mean_abs_error_pct, mean_signed_error_pct, p90_abs_error_pct (nearest rank), worst {id, "
     "error_pct}, above_threshold [ids], threshold_pct, oom_rows, oom_agree, fits_checked_ok_rows, "
     "fits_disagreements_ok_rows [ids], memory_rows, memory_mean_abs_error_pct"),
    ("  held_out_predicted_s, held_out_error_pct", "with --cross-validate, compared rows: the prediction with "
     "the run-fitted numbers refitted without the row's source group, and its signed error"),
    ("cross_validation", "with --cross-validate: method, fits_file, planner_runs, overall and groups.G: rows, "
     "held_out_rows, in_sample and held_out {mean_abs_error_pct, p90_abs_error_pct, mean_signed_error_pct}, "
     "refits[]: fit, how (refit / fallback), trained_on [groups], training_rows, training_mean_abs_error_pct, "
     "values and committed {param: value}"),
    ("summary.scale_buckets[]", "bucket (GPU count 1-8, 9-64, 65-512, >512), rows (compared), "
     "mean_signed_error_pct, mean_abs_error_pct"),
    ("summary.ranking", "min_set_rows, set_count, rows_in_sets, mean_kendall_tau (over sets where tau-b is "
     "defined), worst_top1_regret_pct, worst_top1_regret_set, sets[]: set (key), group, rows, ids, "
     "kendall_tau (tau-b, null when undefined), top1_regret_pct, predicted_best, measured_best (ids), "
     "repeated_layouts (layouts the source ran more than once), repeat_spread_pct (largest max/min - 1 of "
     "their measured times, null without repeats), noise_sigma_pct (pooled relative standard deviation of "
     "the group's repeated layouts), noise_ceiling_tau and noise_ceiling_regret_pct (expected tau-b and top-1 "
     "regret of a predictor that knew each layout's mean time under that noise; null without repeats); "
     "mean_noise_ceiling_tau (over the sets of mean_kendall_tau)"),
]


# ---------------------------------------------------------------------------
# Markdown.

def md_table(head, rows):
    esc = lambda x: str(x).replace("|", "\\|").replace("*", "\\*").replace("\n", " ")
    out = ["| " + " | ".join(esc(c) for c in head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return out


RULES = """\
For every row the script writes the model with `planner model` and asks `planner estimate`
for one optimizer step of the published layout, then compares `step_time_s` with the
published seconds per step. Commands run from the repository root:

```
planner model ARCH [shape flags] --batch MICRO_BATCH -o MODELS/NAME.onnx
planner estimate MODELS/NAME.onnx --profile cost_profiles/P.json --devices N --tp T --pp P --dp D \\
    [--vp V --schedule interleaved | --schedule 1f1b] [--sp] [--cp C] [--ep E] \\
    --micro-batch b --global-batch B [--zero Z] [--distributed-optimizer] --recompute R \\
    --precision X [--attention A] [--memory-format M] [--gpus-per-node G] [--framework F] --json
```

**Model.** Architecture from `model.type` and `model.name`: ResNet -> `resnet --depth 50 --image 224
--classes 1000`; MoE (`num_experts` set or type says MoE) -> `moe --experts E --top-k K`, or
`llama-moe` (`--head-dim`, `--kv-heads`; routed SwiGLU experts) when a public configuration below says
so (its experts and top-k fill null fields), skipped ("MoE details missing") without expert count,
top-k, layers and hidden; Llama / Mistral / Nemotron /
Qwen / GQA / SwiGLU -> `llama` (`--kv-heads` when fewer key/value heads than heads); GPT, MPT, BLOOM
and other decoders -> `gpt`. MPT (ALiBi, no biases) and BLOOM (ALiBi, embedding LayerNorm) are
approximated as gpt (learned positions, biases) and the row says so. GPT, Megatron GPT, BLOOM
and MPT share the token embedding with the output layer (`--tie-embeddings`: one parameter,
copied to the last pipeline stage with its gradient all-reduced once a step); Llama-style and
unknown decoders keep a separate output layer. `--ffn` is `ffn_hidden` when
given. Fields a row leaves null are filled from the public configurations below (only null
fields; each use is noted), a missing vocabulary from the family table; a shape still incomplete
is skipped. `--batch` is the micro-batch.

**Layout.** tp, pp, dp, cp, ep from `parallelism` (null tp/pp/cp/ep = 1, null dp = N/(tp pp cp));
a dp that contradicts `num_gpus` is replaced by N/(tp pp cp), noted (the published times and
TFLOP/s are per `num_gpus`); `model_parallel_size` alone -> tp = mp within a node, else tp = node
size and pp = mp / node. `virtual_pipeline_stages` > 1 -> `--vp V --schedule interleaved`; other
pipelines `--schedule 1f1b` (`gpipe` when the schedule text says so). `sequence_parallel` true ->
`--sp`; when it is null, tp > 1 and the notes list `--tp-comm-overlap` (which Megatron accepts only
with `--sequence-parallel`), `--sp` too. FSDP `mixed_precision=PURE` (bf16 gradient reduction) ->
`--grad-reduce-bytes 2`; so do bf16/fp8 rows of software stacks whose performance configs reduce gradients in
bf16 (table below: the gradient buffer is then 16-bit, docs/estimate.md). Stack conventions (table below) fill a null `distributed_optimizer` (when
no ZeRO stage is given and dp > 1) and a null `sequence_parallel` (when tp > 1), noted. `zero_stage` -> `--zero` (FSDP FULL_SHARD = 3, SHARD_GRAD_OP = 2); `distributed_optimizer`
true -> `--distributed-optimizer`. Micro-batch: as published; SC'21 Table 1 rows from the
reproduction scripts (table below); otherwise 1, noted. Global batch: `global_batch_size`, else
`global_batch_tokens / seq_len`, else micro-batch x dp x `grad_accum_steps`.

**Recompute** (free text): `selective...` -> selective, `full...` -> full, `none` / null -> none,
other checkpointing text -> full (noted); anything else is skipped. **Precision**: fp8 / FP8-* /
amp_fp8 / E4M3 -> fp8; bf16 / amp_bf16 / BF16 / "bf16 mixed" -> bf16; fp16 / "mixed precision
(16-bit)" / half / Apex AMP (O1, O2) -> fp16 (SC'21 and Korthikanti trained in fp16; A100 peaks
are equal for both 16-bit types); TF32 -> tf32; FP32 / full precision -> fp32; "AMP" or "mixed
precision" without a dtype -> fp16 (the only 16-bit type of V100/P100; on A100/H100 fp16 and bf16
have the same peak, noted); int8/int4 training is skipped.

**Software (framework, attention, stack)** from the source's date and the software it names,
never from the `source_group` name (tools/validate_published/era.py). Date: the earliest of
an explicit date field, full dates in the source fields (2024-07-15), an arXiv id (2104.04473 ->
2021-04), a container release (NeMo 24.07, pytorch-21.03), a month and year (Feb 2022), a
venue year (SC'21) or a bare year, in that order of trust; the notes only when the source
fields give none. Named software: first entry of the table below found in the source fields or
notes whose `since` date the source does not precede (a 2021 source that names NeMo is not
given NeMo 24.x behaviour). Nothing named: tensor or pipeline parallelism is read as Megatron-LM
style (megatron-legacy or megatron by date), otherwise no `--framework`. Attention: `flash` when
the source names FlashAttention; `unfused` when it is dated before FlashAttention; the stack's
kernel (table) otherwise; else the flag is omitted (planner default). The stack (nemo,
megatron-core, megatron-bridge, llm-foundry) selects the stack tables below. Any row on V100
or in tf32/fp32 gets `unfused` (FlashAttention needs Ampere and 16-bit inputs), CNN rows
included: they have no attention, but the planner checks the mode against the device and
precision.

**Profile** from `hardware.gpu` (family and memory, read from free text by
`mapping.parse_gpu`) and keywords of `hardware.system`, `hardware.inter_node`, `source_group`
and the source title (table below, first match). The GPU text: the first GPU model named as a
whole word (GH200 is not an H200); an architecture alone only when it has one data-centre part
(Volta -> V100); memory as written, a multiple of 8 of a part's size as a DGX/HGX system's total
(640 GB -> 8 x 80 GB), otherwise by the source's date (A100: 40 GB before 2021, 80 GB from then
or when undated; V100: 16 GB before April 2018, 32 GB after; H100 80, H200 141, P100 16), noted.
PCIe / NVL parts, GH200, A800 / H800, bare Ampere / Hopper and unknown hardware are skipped with
the reason. `--gpus-per-node` is passed only when the row's `gpus_per_node` differs from
the profile's node size. No per-row tuning: no `--inter-node-GBps`, no efficiency overrides.

**Measured seconds per step**, first that applies: `measured.iteration_time_s`;
`derived.iteration_time_s`; global-batch tokens (`global_batch_tokens`, else global batch x
seq_len) / (`tokens_per_s_per_gpu` x `num_gpus`) or / `tokens_per_s`; global batch /
`samples_per_s`; FLOPs / (`num_gpus` x `tflops_per_gpu` x 1e12) with the source's convention:
`tflops_includes_recompute` true -> the row's recompute FLOPs: full -> F = 96 B s l h^2 (1 + s/(6h) +
V/(16 l h)) (Megatron Eq. 3), selective -> model FLOPs + 4 B s^2 l h (the recomputed attention core),
none -> model FLOPs; false
-> F = 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) (model FLOPs), or 8 / 6 x params x tokens when only the
parameter count is known (8 only with full recompute); `mfu` x `peak_tflops_used` counts as model TFLOP/s. Each row records its
conversion (`measured_method`). Rows with none (e.g. per-layer timings) are skipped.

**Comparison.** error = (predicted - measured) / measured. OOM rows: agreement when
`memory.fits` is false. ok rows: `memory.fits` must be true (disagreements counted). Where
`measured.peak_memory_gb` is published it is compared with `memory.peak_bytes` / 1e9 (the reserved
peak: allocated plus the allocator's fragmentation; at most `memory.capacity_bytes`). p90 is the
nearest-rank 90th percentile of |error| (rank ceil(0.9 n)).
"""


XVAL_TEXT = """\
The profile numbers fitted to published runs (not to microbenchmarks) are listed in `{fits}`
with the rows each was fitted on, its grid and its fallback. With `--cross-validate` each
source group is predicted once more with every fit that trained on it fitted again on the other
groups' rows only (same grid; `tools/fit-cluster --fits` reruns the committed fits), or, when no
other group's row is left, with the fit's fallback (the datasheet or microbenchmark value the
number would have without runs). A group no fit trained on keeps its in-sample prediction. The
held-out columns are thus what the planner would predict for a source it has never seen, with
every constant chosen per cluster, never per row."""


RANKING_TEXT = """\
Does the planner order layouts as the measurements do? A set is every compared row with the
same source group, model (shape without the micro-batch), profile, GPU count, global batch and
precision, i.e. rows that differ only in layout; sets of at least 3 rows are scored. Kendall
tau-b (Kendall 1945; ties counted as neither concordant nor discordant) compares the predicted
with the measured seconds per step: 1 = same order, 0 = unrelated, -1 = reversed. Top-1 regret is
the measured time of the row predicted fastest over the measured fastest, minus 1 (0 % = the
planner picks the measured best; of rows tied for the predicted best, the slowest counts).
Repeated layouts: layouts the source ran more than once in the set, and the largest spread of
their measured times (max / min - 1): the measurement noise no prediction can order.
Noise ceiling: the mean Kendall tau-b and top-1 regret that a predictor knowing each layout's
true mean time would get, if every row were measured again with the scatter the source's own
repeats show: sigma is the pooled relative standard deviation of all the group's layouts run
more than once (same set and layout), and the figures are the mean over 2000 seeded draws of
truth x (1 + N(0, sigma)). A set cannot be expected to reach a tau above its ceiling; the
difference between the ceiling and the planner's figure is what a better model could gain."""


def rules_tables():
    out = ["", "Software a source names (first match whose `since` the source's date does not precede; "
           f"FlashAttention from {era.fmt_date(tables.FLASH_ATTENTION_FROM[0])}: "
           f"{tables.FLASH_ATTENTION_FROM[1]}; Megatron-LM overlapped reduction from "
           f"{era.fmt_date(tables.MEGATRON_OVERLAP_FROM[0])}: {tables.MEGATRON_OVERLAP_FROM[1]}):", ""]
    out += md_table(["pattern (regex)", "stack", "--framework", "attention", "since", "why"],
                    [[f"`{p}`", st or "-", fw, a or "(by date / omitted)", era.fmt_date(since[0]) if since else "-",
                      why] for p, st, fw, a, since, why in tables.SOFTWARE_NAMES])
    out += ["", "Stack conventions for fields a row leaves null:", ""]
    out += md_table(["stack", "distributed optimizer", "sequence parallel (tp > 1)", "source"],
                    [[f"`{p}`", "on" if d else "-", "on" if sp else "-", src]
                     for p, d, sp, src in tables.STACK_CONVENTIONS])
    out += ["", "Stacks whose gradients are reduced (and held) in bf16 (`--grad-reduce-bytes 2`, bf16/fp8 rows):", ""]
    out += md_table(["stack", "source"],
                    [[f"`{p}`", src] for p, src in tables.GRAD_REDUCE_BF16_STACKS.items()])
    out += ["", "Profiles (first matching rule):", ""]
    out += md_table(["GPU", "memory GB", "keywords (any)", "profile"],
                    [[f, m or "any", ", ".join(k) if k else "(any)", f"`{p}`"] for f, m, k, p in tables.PROFILE_RULES])
    out += ["", "Public configurations used to fill null model fields:", ""]
    out += md_table(["name key", "arch", "layers", "hidden", "heads", "kv", "head dim", "ffn", "experts (top-k)",
                     "vocab", "source"],
                    [[k, c["arch"], c["layers"], c["hidden"], c["heads"], c.get("kv_heads", "-"), c.get("head_dim", "-"),
                      c["ffn_hidden"], f"{c['experts']} ({c['top_k']})" if c.get("experts") else "-",
                      c["vocab"], c["source"] + (" (squared-ReLU MLP: SwiGLU of width 2F/3)" if c.get("mlp") else "")]
                     for k, c in tables.KNOWN_CONFIGS.items()])
    out += ["", "Vocabulary when missing (first keyword in type + name): "
            + "; ".join(f"`{k}` {v} ({w})" for k, v, w in tables.FAMILY_VOCAB) + ".", ""]
    out += [f"SC'21 Table 1 micro-batch and virtual stages ({tables.SC21_SOURCE}):", ""]
    out += md_table(["layers", "hidden", "tp", "pp", "micro-batch", "layers per virtual stage", "DDP"],
                    [[*k, mbs, per or "- (no interleaving)", ddp] for k, (mbs, per, ddp) in tables.SC21_TABLE1.items()])
    out += ["", f"ResNet-50 per-GPU batch ({tables.DLE_SOURCE}; an assumption: the README does not state it): "
            + ", ".join(f"{p} {x} {b}" for (p, x), b in tables.DLE_RESNET50_BATCH.items())
            + f"; otherwise {tables.DLE_DEFAULT_BATCH}. Global batch = batch x GPUs x int("
            + f"{tables.DLE_OPTIMIZER_BATCH} / (batch x GPUs)) (gradient accumulation to optimizer_batch_size). "
            + "Activation layout (`--memory-format`, same file): nhwc (channels_last) for "
            + ", ".join(f"{p} {x}" for p, x in sorted(tables.DLE_RESNET50_NHWC))
            + "; otherwise nchw (main.py's default), where tensor-core convolutions pay cuDNN's layout "
            + "transposes (docs/estimate.md).", ""]
    return out


def markdown_report(doc, command):
    s = doc["summary"]
    out = ["# Validation against published training runs", "",
           "Generated by `tools/validate-published`; do not edit by hand. Regenerate with:", "",
           "```", command, "```", "",
           f"Input: `{doc['runs_file']}` ({doc['rows_in_file']} rows"
           + (f"; group `{doc['group']}` only" if doc["group"] else "") + f"). Planner: "
           + (doc["planner_version"] or "unknown version") + ".", "",
           "## Summary", ""]
    lines = [group_line("**overall**", s["overall"])] + [group_line(f"`{g}`", v) for g, v in s["groups"].items()]
    out += md_table(SUMMARY_HEAD, lines)
    out += ["", "Evaluated = time compared + OOM rows checked; errors are of seconds per optimizer step.", ""]
    x = doc.get("cross_validation")
    if x:
        out += ["## In sample and held out", "", XVAL_TEXT.format(fits=x["fits_file"]), ""]
        out += md_table(XVAL_HEAD, xval_lines(x, lambda g: f"`{g}`", "**overall**"))
        out += [""]
    out += ["Signed mean error by GPU count (compared rows; negative = predicted faster than measured):", ""]
    out += md_table(BUCKET_HEAD, bucket_lines(s))
    out += ["", "## Ranking", "", RANKING_TEXT, "", ranking_line(s["ranking"]), ""]
    if s["ranking"]["sets"]:
        out += md_table(SET_HEAD, set_lines(s["ranking"]))
    out += ["", "## How a row becomes commands", "", RULES] + rules_tables()
    done = [r for r in doc["rows"] if r["outcome"] in ("compared", "oom_checked")]
    above = [r for r in done if r["error_pct"] is not None and abs(r["error_pct"]) > stats.THRESHOLD_PCT]
    out += ["", f"## Rows above {stats.THRESHOLD_PCT:g} % ({len(above)})", ""]
    out += md_table(["id", "group", "measured s", "predicted s", "error", "cause", "plan", "notes"],
                    [[r["id"], r["group"], measured_text(r), fmt_s(r["predicted_s"]), fmt_pct(r["error_pct"]),
                      causes.cause_of(r["id"]) or "not analysed", r["plan"], "; ".join(r["notes"]) or "-"]
                     for r in above]) if above else ["None."]
    mem = [r for r in done if (r["status"] == "OOM") == bool(r["fits"]) and r["fits"] is not None]
    out += ["", f"## Memory disagreements ({len(mem)})", "",
            "Runs that trained but are predicted not to fit, and out-of-memory runs predicted to fit.", ""]
    out += md_table(["id", "status", "predicted GB", "cause"],
                    [[r["id"], r["status"], fmt_s(r["memory_predicted_gb"]), causes.cause_of(r["id"], "memory") or "not analysed"]
                     for r in mem]) if mem else ["None."]
    out += ["", "## Every evaluated row", ""]
    if x:
        out += md_table(["id", "group", "measured s", "predicted s", "error", "held-out error", "fits",
                         "memory meas/pred GB", "plan", "measured from"],
                        [[r["id"], r["group"], measured_text(r), fmt_s(r["predicted_s"]), fmt_pct(r["error_pct"]),
                          fmt_pct(r.get("held_out_error_pct")), fits_text(r), mem_pair(r), r["plan"],
                          r["measured_method"] or "-"] for r in done])
    else:
        out += md_table(["id", "group", "measured s", "predicted s", "error", "fits", "memory meas/pred GB",
                         "plan", "measured from"],
                        [[r["id"], r["group"], measured_text(r), fmt_s(r["predicted_s"]), fmt_pct(r["error_pct"]),
                          fits_text(r), mem_pair(r), r["plan"], r["measured_method"] or "-"] for r in done])
    for kind in ("skipped", "failed"):
        rs = [r for r in doc["rows"] if r["outcome"] == kind]
        out += ["", f"## {kind.capitalize()} rows ({len(rs)})", ""]
        out += md_table(["id", "group", "reason"], [[r["id"], r["group"], r["reason"]] for r in rs]) if rs else ["None."]
    out += ["", "## JSON output (`--json`)", "", "Same content as this page, as one object on stdout:", ""]
    out += md_table(["field", "meaning"], [[f"`{f.strip()}`" if not f.startswith("  ") else f"&nbsp;&nbsp;`{f.strip()}`",
                                             m] for f, m in JSON_FIELDS])
    return "\n".join(out) + "\n"


def mem_pair(r):
    if r["memory_measured_gb"] is None:
        return "-"
    return f"{r['memory_measured_gb']:.4g} / {fmt_s(r['memory_predicted_gb'])} ({fmt_pct(r['memory_error_pct'])})"
