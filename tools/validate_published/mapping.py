"""One published-run row -> `planner model` and `planner estimate` arguments.

map_row() reads a row defensively (any field may be missing, null or of the
wrong type), records every assumption it makes in Mapping.notes, and raises
Skip with a one-line reason for a row it cannot map. It runs no process.
"""

import json
import math
import os
import re
from dataclasses import dataclass, field

from . import era, tables


class Skip(Exception):
    """A row that cannot be mapped; str(exc) is the reason."""


@dataclass
class Mapping:
    arch: str
    model_args: list          # after `planner model`, without -o
    model_stem: str           # file name of the model, without .onnx
    estimate_args: list       # after `planner estimate MODEL.onnx`, ending in --json
    plan: str                 # compact summary for tables
    notes: list = field(default_factory=list)
    eff: dict = field(default_factory=dict)  # effective values (gbs, seq, num_gpus, layers, ...)


# ---------------------------------------------------------------------------
# Defensive field access.

def get(row, *keys):
    cur = row
    for k in keys:
        if not isinstance(cur, dict):
            return None
        cur = cur.get(k)
    return cur


def as_int(v):
    """An integer value (int, integral float or numeric string), else None."""
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return int(v) if math.isfinite(v) and v == int(v) else None
    if isinstance(v, str):
        try:
            return as_int(float(v.strip()))
        except ValueError:
            return None
    return None


def as_pos_float(v):
    """A finite positive number, else None."""
    if v is None or isinstance(v, bool):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) and f > 0 else None


def as_text(v):
    return v if isinstance(v, str) else ""


def pos_int(row, *keys):
    v = as_int(get(row, *keys))
    return v if v is not None and v > 0 else None


# ---------------------------------------------------------------------------
# Free-text fields.

def parse_recompute(text):
    """(none|selective|full, note or None). Raises Skip on text it cannot read."""
    if text is None:
        return "none", "recompute not stated: none assumed"
    if not isinstance(text, str):
        raise Skip(f"recompute not understood: {text!r}")
    t = text.strip().lower()
    if not t:
        return "none", "recompute not stated: none assumed"
    if t in ("none", "no", "off", "false", "null"):
        return "none", None
    if t in ("full", "selective"):
        return t, None
    plain = re.fullmatch(r"(full|selective)( activation (checkpointing|recompute|recomputation))?", t)
    if plain:
        return plain.group(1), None
    for word in ("selective", "full"):
        if word in t:
            return word, f"recompute text '{text}' read as {word}"
    if t.startswith(("none", "no ")):
        return "none", f"recompute text '{text}' read as none"
    if "checkpoint" in t or "recompute" in t or "recomputation" in t:
        return "full", f"recompute text '{text}' read as full (no granularity given)"
    raise Skip(f"recompute text not understood: '{text}'")


def parse_precision(text, family=None):
    """(fp8|bf16|fp16|tf32|fp32, note or None) from free text; family (of
    parse_gpu) settles 'mixed precision' without a dtype. Raises Skip when
    absent or unreadable."""
    t = as_text(text).strip().lower()
    if not t:
        raise Skip("precision not given")
    plain = re.fullmatch(r"(?:amp_)?(fp8|bf16|fp16|tf32|fp32)(?:-[a-z]+)?", t)
    if plain:
        return plain.group(1), None
    if re.search(r"\bint[48]\b", t) and not re.search(r"fp8|bf16|fp16|float16", t):
        raise Skip(f"precision '{text}': integer training is not modelled")
    if "fp8" in t or "float8" in t or "e4m3" in t or "e5m2" in t:
        return "fp8", f"precision '{text}' read as fp8"
    if "bf16" in t or "bfloat16" in t or "bfloat-16" in t:
        return "bf16", f"precision '{text}' read as bf16"
    if "fp16" in t or "16-bit" in t or "float16" in t or "half" in t:
        return "fp16", f"precision '{text}' read as fp16"
    if "tf32" in t or "tensorfloat" in t:
        return "tf32", None
    if "fp32" in t or "float32" in t or "single" in t or re.search(r"\bfull precision\b", t):
        return "fp32", None
    if "apex" in t or re.search(r"\bo[123]\b", t):
        return "fp16", f"precision '{text}' read as fp16 (NVIDIA Apex AMP casts to fp16)"
    if re.search(r"\bamp\b|mixed", t):
        if family in tables.FP16_ONLY_FAMILIES:
            return "fp16", (f"precision '{text}' read as fp16 (no dtype given; {family} has no bf16, "
                            "fp16 is its only 16-bit arithmetic)")
        return "fp16", (f"precision '{text}' read as fp16 (no dtype given; fp16 and bf16 have the same tensor-core "
                        "peak on A100/H100, so the step time barely depends on the choice)")
    raise Skip(f"precision not understood: '{text}'")


def parse_gpu(text, date=None):
    """(family, memory GB, notes) from a free-text GPU description such as
    'A100 SXM4 (DGX A100)', 'NVIDIA Ampere (A100 implied by ...)',
    'H100 80GB HBM3', 'V100-SXM2-16GB' or 'Tesla P100'. date (fractional
    year of the source, or None) settles a memory size the text omits
    (tables.MEMORY_BY_DATE). Raises Skip with the reason otherwise."""
    t = as_text(text).lower()
    if not t.strip():
        raise Skip("hardware.gpu not given")
    found = []
    for pattern, fam in tables.GPU_FAMILIES:
        m = re.search(r"(?<![a-z0-9])" + pattern + r"(?![a-z0-9])", t)
        if m:
            found.append((m.start(), fam))
    notes = []
    if not found:
        arch = next(((a, fam) for a, fam in tables.GPU_ARCHITECTURES if re.search(r"\b" + a + r"\b", t)), None)
        if arch is None:
            raise Skip(f"unknown hardware: GPU '{text}'")
        if arch[1] is None:
            raise Skip(f"GPU '{text}' names only an architecture ({arch[0]}), which has several data-centre parts")
        found = [(0, arch[1])]
        notes.append(f"GPU '{text}': architecture {arch[0]} read as {arch[1]} (its only data-centre part)")
    family = min(found)[1]
    if family in tables.GPU_WITHOUT_PROFILE:
        raise Skip(f"no bundled profile for GPU '{text}' ({tables.GPU_WITHOUT_PROFILE[family]})")
    if any(re.search(r"\b" + w + r"\b", t) for w in tables.UNSUPPORTED_GPU_WORDS):
        raise Skip(f"no bundled profile for GPU '{text}' (PCIe/NVL variant)")
    sizes = tables.GPU_MEMORY_SIZES.get(family, ())
    mem = None
    for m in re.finditer(r"(\d+)\s*-?\s*g(?:b|ib)\b", t):
        v = int(m.group(1))
        if v in sizes:
            mem = v
            break
        if v % 8 == 0 and v // 8 in sizes:   # a DGX/HGX system's total, 8 GPUs
            mem = v // 8
            notes.append(f"GPU '{text}': {v} GB read as a system of 8 x {mem} GB")
            break
    else:
        if re.search(r"(\d+)\s*-?\s*g(?:b|ib)\b", t) and sizes:
            raise Skip(f"GPU '{text}': memory size not one of {family}'s ({', '.join(map(str, sizes))} GB)")
    if mem is None:
        rule = tables.MEMORY_BY_DATE.get(family)
        if rule:
            since, before, after, why = rule
            mem = after if date is None or date >= since else before
            notes.append(f"GPU memory not given: {family} {mem} GB assumed ("
                         + ("source date unknown; " if date is None else "")
                         + why + ")")
    return family, mem, notes


# ---------------------------------------------------------------------------
# Framework, attention, profile.

def choose_framework_attention(row, is_cnn, family, precision, tp=1, pp=1):
    """(framework or None, attention or None, stack or None, notes): era.py's
    rule (source date and named software, never the group name), then
    FlashAttention's hardware and precision limits."""
    sw = era.software(row, is_cnn, tp, pp)
    fw, attn, notes = sw.framework, sw.attention, list(sw.notes)
    no_flash = family if family in tables.NO_FLASH_FAMILIES else precision if precision in ("tf32", "fp32") else None
    if no_flash and attn != "unfused":
        why = "needs Ampere or newer" if no_flash == family else "needs 16-bit or fp8 inputs"
        notes.append(f"attention unfused: FlashAttention {why} ({no_flash})" +
                     ("; the model has no attention, but the planner checks the mode" if is_cnn else ""))
        attn = "unfused"
    return fw, attn, sw.stack, notes


_PROFILE_CACHE = {}


def profile_node_size(path):
    """devices_per_group of the profile's last intra-node level, or None."""
    if path in _PROFILE_CACHE:
        return _PROFILE_CACHE[path]
    size = None
    try:
        with open(path, encoding="utf-8") as f:
            prof = json.load(f)
        for level in get(prof, "interconnect", "levels") or []:
            v = as_int(get(level, "devices_per_group", "value"))
            if v:
                size = v
    except (OSError, ValueError):
        size = None
    _PROFILE_CACHE[path] = size
    return size


def choose_profile(row, repo_root):
    """(profile name, relative path, notes, GPU family). Raises Skip for unknown hardware."""
    gpu = as_text(get(row, "hardware", "gpu"))
    family, mem, notes = parse_gpu(gpu, era.source_date(row)[0])
    words = " ".join(as_text(x) for x in (get(row, "hardware", "system"), get(row, "hardware", "inter_node"),
                                           row.get("source_group"), get(row, "source", "title"))).lower()
    for fam, rmem, keywords, name in tables.PROFILE_RULES:
        if fam != family or (rmem is not None and rmem != mem):
            continue
        if keywords is not None and not any(k in words for k in keywords):
            continue
        break
    else:
        raise Skip(f"unknown hardware: no profile rule for GPU '{gpu}' ({family}"
                   + (f" {mem} GB" if mem else "") + ")")
    rel = os.path.join("cost_profiles", name + ".json")
    if not os.path.isfile(os.path.join(repo_root, rel)):
        raise Skip(f"profile {rel} not found")
    if not get(row, "hardware", "system") and not get(row, "hardware", "inter_node"):
        notes.append(f"cluster not published: {name} assumed")
    return name, rel, notes, family


# ---------------------------------------------------------------------------
# Model shape.

def norm_name(name):
    return re.sub(r"[^A-Z0-9]", "", as_text(name).upper())


def known_config(name):
    key = norm_name(name)
    key = tables.KNOWN_ALIASES.get(key, key)
    return key, tables.KNOWN_CONFIGS.get(key)


def gpt2_bpe_vocab(tp):
    mult = 128 * tp
    return (50257 + mult - 1) // mult * mult


def choose_arch(words, num_experts):
    """gpt | llama | moe | resnet, from lower-case 'type name'."""
    if "resnet" in words:
        return "resnet"
    if "cnn" in words.split():
        raise Skip("CNN other than ResNet: no planner model architecture for it")
    if num_experts or "moe" in words.split() or "mixture" in words:
        return "moe"  # llama-moe when a known config says so (model_shape)
    if any(k in words for k in ("llama", "mistral", "nemotron", "qwen", "gqa", "swiglu")):
        return "llama"
    if any(k in words for k in ("gpt", "mpt", "bloom", "decoder", "transformer")):
        return "gpt"
    return None


def model_shape(row, tp):
    """Dict arch, layers, hidden, heads, kv_heads, ffn, seq, vocab, experts, top_k, notes."""
    m = row.get("model") if isinstance(row.get("model"), dict) else {}
    name = as_text(m.get("name"))
    words = (as_text(m.get("type")) + " " + name).lower()
    experts = as_int(m.get("num_experts"))
    arch = choose_arch(words, experts)
    if arch is None:
        raise Skip(f"unknown model type '{m.get('type')}' / name '{name}'")
    if arch == "resnet":
        return {"arch": "resnet", "notes": []}
    notes = []
    s = {k: as_int(m.get(k)) for k in ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "seq_len", "vocab")}
    key, cfg = known_config(name)
    mlp = None
    head_dim = None
    top_k = as_int(m.get("experts_per_token"))
    if cfg:
        mlp = cfg.get("mlp")
        filled = [k for k in ("layers", "hidden", "heads", "kv_heads", "ffn_hidden") if s[k] is None and cfg.get(k)]
        for k in filled:
            s[k] = cfg[k]
        if s["vocab"] is None:
            v = cfg["vocab"]
            s["vocab"] = gpt2_bpe_vocab(tp) if v == "gpt2-bpe" else v
            filled.append("vocab")
            if v == "gpt2-bpe":
                notes.append(f"vocab {s['vocab']} = GPT-2 BPE 50257 padded to a multiple of 128 x tp")
        if filled:
            notes.append(f"{', '.join(filled)} from the public config of {name} ({cfg['source']})")
        if arch == "gpt" and cfg["arch"] == "llama":
            arch = "llama"
        if arch == "moe" and cfg["arch"] == "llama-moe":
            arch = "llama-moe"
            moe_filled = [k for k, v in (("experts", experts), ("experts_per_token", top_k)) if v is None]
            experts = experts or cfg["experts"]
            top_k = top_k or cfg["top_k"]
            if moe_filled:
                notes.append(f"{', '.join(moe_filled)} from the public config of {name}")
        head_dim = cfg.get("head_dim")
    if arch in ("moe", "llama-moe"):
        if not experts or not top_k or s["layers"] is None or s["hidden"] is None:
            raise Skip("MoE details missing (experts, experts_per_token, layers or hidden not given)")
    missing = [k for k in ("layers", "hidden", "heads", "seq_len") if not s[k] or s[k] <= 0]
    if missing:
        raise Skip(f"model shape missing ({', '.join(missing)}) and no known public config for '{name or m.get('type')}'")
    if head_dim is None and s["hidden"] % s["heads"]:
        raise Skip(f"hidden {s['hidden']} is not divisible by heads {s['heads']}")
    if s["vocab"] is None:
        fam = next(((v, why) for kw, v, why in tables.FAMILY_VOCAB if kw in words), None)
        if fam is None:
            raise Skip(f"vocab missing for '{name or m.get('type')}'")
        s["vocab"] = fam[0]
        notes.append(f"vocab not given: {fam[0]} ({fam[1]})")
    no_bias = False
    if "mpt" in words:
        no_bias = True
        notes.append("MPT approximated as gpt --no-bias (learned positions instead of ALiBi)")
    elif "bloom" in words:
        notes.append("BLOOM approximated as gpt (learned positions, biases); BLOOM uses ALiBi and an "
                     "embedding LayerNorm")
    # Families whose public code shares the token embedding with the output
    # layer: GPT-2 / GPT-3 and Megatron's GPT (share_embeddings_and_output_weights
    # on unless --untie-embeddings-and-output-weights), BLOOM (DeepSpeed
    # TiedLayerSpec "embed"), MPT (logits from transformer.wte). Llama-style
    # models (separate lm_head) and decoders of unknown family stay untied.
    tied = arch == "gpt" and any(k in words for k in ("gpt", "mpt", "bloom", "megatron"))
    if tied:
        notes.append("output layer tied to the token embedding (GPT / Megatron GPT / BLOOM / MPT share them)")
    if mlp == "squared-relu" and s["ffn_hidden"]:
        f = s["ffn_hidden"]
        s["ffn_hidden"] = f * 2 // 3
        notes.append(f"squared-ReLU MLP of width {f} approximated as SwiGLU of width {s['ffn_hidden']} "
                     "(same weights and FLOPs); LayerNorm1p and 50% rotary as RMSNorm and full rotary")
    if arch == "gpt" and s["ffn_hidden"] is None:
        notes.append("ffn_hidden not given: 4 x hidden (planner default)")
    if arch in ("llama", "llama-moe") and s["ffn_hidden"] is None:
        notes.append("ffn_hidden not given: planner's llama default (8/3 hidden rounded up to 256)")
    if arch in ("llama", "llama-moe"):
        kv = s["kv_heads"]
        if kv and (kv > s["heads"] or s["heads"] % kv):
            raise Skip(f"heads {s['heads']} not divisible by kv_heads {kv}")
        d = head_dim or s["hidden"] // s["heads"]
        if d % 2:
            raise Skip(f"head size {d} is odd (rotary needs an even one)")
    return {"arch": arch, "layers": s["layers"], "hidden": s["hidden"], "heads": s["heads"],
            "kv_heads": s["kv_heads"], "head_dim": head_dim, "ffn": s["ffn_hidden"], "seq": s["seq_len"],
            "vocab": s["vocab"], "experts": experts, "top_k": top_k, "no_bias": no_bias, "tied": tied,
            "notes": notes}


# ---------------------------------------------------------------------------
# Parallel layout and batch.

def parallel_degrees(row, notes):
    par = row.get("parallelism") if isinstance(row.get("parallelism"), dict) else {}
    tp, pp, dp = pos_int(par, "tp"), pos_int(par, "pp"), pos_int(par, "dp")
    cp, ep, mp = pos_int(par, "cp") or 1, pos_int(par, "ep") or 1, pos_int(par, "model_parallel_size")
    gpn = pos_int(row, "hardware", "gpus_per_node")
    if tp is None and pp is None and mp:
        node = gpn or 8
        if mp <= node:
            tp, pp = mp, 1
            notes.append(f"only model_parallel_size {mp} published: tp {mp}, pp 1 assumed")
        elif mp % node == 0:
            tp, pp = node, mp // node
            notes.append(f"only model_parallel_size {mp} published: tp {node} (one node), pp {pp} assumed")
        else:
            raise Skip(f"model_parallel_size {mp} cannot be split into tp x pp")
    tp, pp = tp or 1, pp or 1
    n = pos_int(row, "hardware", "num_gpus")
    if n is None:
        if dp is None:
            raise Skip("hardware.num_gpus and parallelism.dp both missing")
        n = tp * pp * dp * cp
        notes.append(f"num_gpus not given: tp x pp x dp x cp = {n}")
    if dp is None:
        if n % (tp * pp * cp):
            raise Skip(f"num_gpus {n} is not a multiple of tp x pp x cp = {tp * pp * cp}")
        dp = n // (tp * pp * cp)
        if n > 1:
            notes.append(f"dp not given: num_gpus / (tp x pp x cp) = {dp}")
    elif tp * pp * dp * cp != n:
        if n % (tp * pp * cp):
            raise Skip(f"tp x pp x dp x cp = {tp * pp * dp * cp} differs from num_gpus {n}")
        new = n // (tp * pp * cp)
        notes.append(f"row's dp {dp} disagrees with num_gpus {n} (tp x pp x dp x cp = {tp * pp * dp * cp}): "
                     f"dp {new} used (the published time and TFLOP/s are per num_gpus)")
        dp = new
    return tp, pp, dp, cp, ep, n


def is_sc21_table1(row):
    group = as_text(row.get("source_group"))
    loc = (as_text(get(row, "source", "title")) + " " + as_text(get(row, "source", "location"))).lower()
    return group.startswith("megatron_sc21_table1") or ("2104.04473" in loc and "table 1" in loc)


def resnet_batch(row, prec, notes):
    """Per-GPU batch and optimizer batch of a DeepLearningExamples ResNet-50 row."""
    gpu = as_text(get(row, "hardware", "gpu")).upper()
    platform = "DGXA100" if "A100" in gpu else "DGX1V" if "V100" in gpu else None
    dle_prec = {"fp16": "AMP", "fp32": "FP32", "tf32": "TF32"}.get(prec)
    b = tables.DLE_RESNET50_BATCH.get((platform, dle_prec))
    if b is None:
        b = tables.DLE_DEFAULT_BATCH
        notes.append(f"per-GPU batch not published: {b} assumed (DeepLearningExamples launcher default)")
    else:
        notes.append(f"per-GPU batch not published: {b} assumed ({tables.DLE_SOURCE}, resnet50 "
                     f"{platform} {dle_prec}; the README's container may differ)")
    return b


def resnet_memory_format(row, prec, notes):
    """nchw | nhwc of a DeepLearningExamples ResNet-50 row (configs.yml memory_format)."""
    gpu = as_text(get(row, "hardware", "gpu")).upper()
    platform = "DGXA100" if "A100" in gpu else "DGX1V" if "V100" in gpu else None
    dle_prec = {"fp16": "AMP", "fp32": "FP32", "tf32": "TF32"}.get(prec)
    fmt = "nhwc" if (platform, dle_prec) in tables.DLE_RESNET50_NHWC else "nchw"
    notes.append(f"activations {fmt} ({tables.DLE_SOURCE}: memory_format "
                 + ("nhwc" if fmt == "nhwc" else "not set, main.py default nchw") + ")")
    return fmt


def batches(row, shape, precision, tp, pp, dp, notes):
    """(micro-batch, global batch, virtual stages or None); appends notes."""
    par = row.get("parallelism") if isinstance(row.get("parallelism"), dict) else {}
    training = row.get("training") if isinstance(row.get("training"), dict) else {}
    mbs = pos_int(training, "micro_batch_size")
    vp = pos_int(par, "virtual_pipeline_stages")
    gbs = pos_int(training, "global_batch_size")
    if shape["arch"] == "resnet":
        if mbs is None:
            if as_pos_float(get(row, "measured", "samples_per_s")) is None:
                raise Skip("ResNet row without per-GPU batch or samples_per_s")
            mbs = resnet_batch(row, precision, notes)
        if gbs is None:
            accum = max(1, tables.DLE_OPTIMIZER_BATCH // (mbs * dp))
            gbs = mbs * dp * accum
            notes.append(f"global batch {gbs} = {mbs} x {dp} GPUs x {accum} accumulation steps "
                         f"(optimizer_batch_size {tables.DLE_OPTIMIZER_BATCH}, DeepLearningExamples main.py)")
    elif mbs is None:
        key = (shape["layers"], shape["hidden"], tp, pp)
        if is_sc21_table1(row) and key in tables.SC21_TABLE1:
            mbs, per_stage, ddp = tables.SC21_TABLE1[key]
            msg = f"micro-batch {mbs} from {tables.SC21_SOURCE}"
            if vp is None and per_stage and shape["layers"] % (pp * per_stage) == 0:
                vp = shape["layers"] // (pp * per_stage)
                msg += f"; virtual stages {vp} ({per_stage} layers per virtual stage there)"
            if ddp == "torch":
                msg += "; the script uses PyTorch DDP here (gradient all-reduce overlapped with backward)"
            notes.append(msg)
        else:
            mbs = 1
            notes.append("micro-batch not published: 1 assumed")
    seq = shape.get("seq")
    if gbs is None:
        tokens = pos_int(training, "global_batch_tokens")
        accum = pos_int(training, "grad_accum_steps")
        if tokens and seq and tokens % seq == 0:
            gbs = tokens // seq
            notes.append(f"global batch {gbs} = global_batch_tokens / seq_len")
        elif accum:
            gbs = mbs * dp * accum
            notes.append(f"global batch {gbs} = micro-batch x dp x grad_accum_steps")
        else:
            raise Skip("global batch size not given")
    if gbs % (mbs * dp):
        raise Skip(f"global batch {gbs} is not a multiple of micro-batch {mbs} x dp {dp}")
    return mbs, gbs, vp


def model_command(row, shape, mbs, notes):
    """(`planner model` arguments without -o, file stem)."""
    arch, seq = shape["arch"], shape.get("seq")
    if arch == "resnet":
        name = as_text(get(row, "model", "name")).lower()
        m = re.search(r"resnet-?(\d+)", name)
        depth = int(m.group(1)) if m else 50
        if depth not in (50, 101, 152):
            raise Skip(f"ResNet depth {depth} not supported by planner model")
        margs = ["resnet", "--depth", str(depth), "--image", "224", "--classes", "1000", "--batch", str(mbs)]
        stem = f"resnet{depth}-i224-c1000-b{mbs}"
        notes.append("224 x 224 images, 1000 classes (ImageNet)")
    else:
        margs = [arch, "--layers", str(shape["layers"]), "--hidden", str(shape["hidden"]),
                 "--heads", str(shape["heads"])]
        stem = f"{arch}-l{shape['layers']}-h{shape['hidden']}-a{shape['heads']}"
        if arch in ("llama", "llama-moe") and shape["kv_heads"] and shape["kv_heads"] != shape["heads"]:
            margs += ["--kv-heads", str(shape["kv_heads"])]
            stem += f"-kv{shape['kv_heads']}"
        if shape.get("head_dim"):
            margs += ["--head-dim", str(shape["head_dim"])]
            stem += f"-d{shape['head_dim']}"
        if shape["ffn"]:
            margs += ["--ffn", str(shape["ffn"])]
            stem += f"-f{shape['ffn']}"
        margs += ["--seq", str(seq), "--vocab", str(shape["vocab"]), "--batch", str(mbs)]
        stem += f"-s{seq}-v{shape['vocab']}-b{mbs}"
        if arch in ("moe", "llama-moe"):
            margs += ["--experts", str(shape["experts"]), "--top-k", str(shape["top_k"])]
            stem += f"-e{shape['experts']}-k{shape['top_k']}"
        if shape.get("no_bias") and arch in ("gpt", "moe"):
            margs.append("--no-bias")
            stem += "-nobias"
        if shape.get("tied") and arch == "gpt":
            margs.append("--tie-embeddings")
            stem += "-tied"
    return margs, stem


# ---------------------------------------------------------------------------

def rank_set(group, eff):
    """Key of the row's ranking set (ranking.py): rows that differ only in layout."""
    return (f"{group} | {eff['model_key']} | {eff['profile']} x{eff['num_gpus']} | gbs {eff['gbs']} | "
            f"{eff['precision']}")


def map_row(row, repo_root):
    """Mapping for one row; raises Skip with a reason."""
    if not isinstance(row, dict):
        raise Skip("row is not a JSON object")
    notes = []
    status = row.get("status")
    if status not in ("ok", "OOM"):
        if status is None:
            notes.append("status not given: ok assumed")
        else:
            raise Skip(f"status '{status}' not understood (expected ok or OOM)")
    profile, profile_path, pnotes, family = choose_profile(row, repo_root)
    tp, pp, dp, cp, ep, n = parallel_degrees(row, notes)
    shape = model_shape(row, tp)
    arch = shape["arch"]
    notes += pnotes + shape["notes"]
    recompute, rnote = parse_recompute(row.get("recompute"))
    precision, pnote = parse_precision(row.get("precision"), family)
    framework, attention, stack, fnotes = choose_framework_attention(row, arch == "resnet", family, precision, tp, pp)
    model_key, _ = known_config(get(row, "model", "name"))
    recipe = next(((st, src) for g, k, st, src in tables.RECIPE_SETTINGS
                   if stack == g and k == model_key), None)
    if recipe and "recompute" in recipe[0] and row.get("recompute") is None:
        recompute = recipe[0]["recompute"]
        rnote = f"recompute not stated: {recompute}, from {recipe[1]}"
    modules = None
    if recipe and "recompute" in recipe[0] and row.get("recompute") is None:
        modules = recipe[0].get("recompute_modules")
        if modules:
            rnote = f"recompute not stated: {recompute} ({modules}), from {recipe[1]}"
    recipe_flags = {k: v for k, v in (recipe[0] if recipe else {}).items()
                    if k not in ("recompute", "recompute_modules")}
    notes += [x for x in (rnote, pnote) if x]
    notes += fnotes

    par = row.get("parallelism") if isinstance(row.get("parallelism"), dict) else {}
    mbs, gbs, vp = batches(row, shape, precision, tp, pp, dp, notes)
    seq = shape.get("seq")
    margs, stem = model_command(row, shape, mbs, notes)

    # --- planner estimate
    eargs = ["--profile", profile_path, "--devices", str(n), "--tp", str(tp), "--pp", str(pp), "--dp", str(dp)]
    plan = [f"tp{tp} pp{pp} dp{dp}"]
    sched_text = as_text(par.get("pipeline_schedule")).lower()
    if vp and vp > 1:
        if pp > 1:
            eargs += ["--vp", str(vp), "--schedule", "interleaved"]
            plan.append(f"vp{vp}")
        else:
            notes.append(f"virtual stages {vp} ignored: pp = 1")
    elif pp > 1:
        sched = "gpipe" if "gpipe" in sched_text else "1f1b"
        if "interleav" in sched_text:
            notes.append("schedule text says interleaved but no virtual stage count is known: 1f1b used")
        eargs += ["--schedule", sched]
    conv = next((c for c in tables.STACK_CONVENTIONS if stack == c[0]), None)
    sp = par.get("sequence_parallel")
    if sp is None and tp > 1 and "tp-comm-overlap" in as_text(row.get("notes")).lower():
        sp = True
        notes.append("sequence parallel: the notes list --tp-comm-overlap, which Megatron allows only with "
                     "--sequence-parallel")
    if sp is None and tp > 1 and conv and conv[2]:
        sp = True
        notes.append(f"sequence parallel not stated: on, as in {conv[3]}")
    if sp is True:
        eargs.append("--sp")
        plan.append("sp")
    overlap_src = tables.TP_COMM_OVERLAP_STACKS.get(stack)
    if tp > 1 and sp is True and ("tp-comm-overlap" in as_text(row.get("notes")).lower() or overlap_src):
        eargs.append("--tp-comm-overlap")
        plan.append("tp-overlap")
        notes.append("tensor-parallel communication overlapped with GEMMs: "
                     + (overlap_src or "the notes list --tp-comm-overlap"))
    if cp > 1:
        eargs += ["--cp", str(cp)]
        plan.append(f"cp{cp}")
    if ep > 1:
        eargs += ["--ep", str(ep)]
        plan.append(f"ep{ep}")
    eargs += ["--micro-batch", str(mbs), "--global-batch", str(gbs)]
    plan.append(f"mbs{mbs} gbs{gbs}")
    zero = as_int(par.get("zero_stage"))
    fsdp = as_text(par.get("fsdp")).upper()
    if zero is None and "FULL_SHARD" in fsdp:
        zero = 3
    elif zero is None and "SHARD_GRAD_OP" in fsdp:
        zero = 2
    if zero is not None:
        if zero not in (0, 1, 2, 3):
            raise Skip(f"zero_stage {zero} not understood")
        eargs += ["--zero", str(zero)]
        plan.append(f"zero{zero}")
    distopt = par.get("distributed_optimizer")
    if distopt is None and zero is None and conv and conv[1] and dp > 1:
        distopt = True
        notes.append(f"distributed optimizer not stated: on, as in {conv[3]}")
    if distopt is True:
        eargs.append("--distributed-optimizer")
        plan.append("distopt")
    if stack == tables.FUSED_LOSS_STACK[0]:
        eargs.append("--fused-loss")
        notes.append(f"fused cross-entropy: {tables.FUSED_LOSS_STACK[1]}")
    bf16_grads = tables.GRAD_REDUCE_BF16_STACKS.get(stack)
    if "PURE" in fsdp:
        eargs += ["--grad-reduce-bytes", "2"]
        notes.append("FSDP mixed_precision=PURE: gradients reduced in bf16 (--grad-reduce-bytes 2)")
    elif bf16_grads and precision in ("bf16", "fp8"):
        eargs += ["--grad-reduce-bytes", "2"]
        plan.append("grad-bf16")
        notes.append(f"gradients reduced and held in bf16 (--grad-reduce-bytes 2): {bf16_grads}")
    if recipe_flags.get("split_embedding_loss") and pp > 1:
        eargs.append("--split-embedding-loss")
        plan.append("split-emb-loss")
        notes.append(f"embedding and loss counted as layers in the pipeline split: {recipe[1]}")
    if "optimizer_state_dtype" in recipe_flags:
        eargs += ["--optimizer-state-dtype", recipe_flags["optimizer_state_dtype"]]
        plan.append(f"opt-{recipe_flags['optimizer_state_dtype']}")
        notes.append(f"optimizer states {recipe_flags['optimizer_state_dtype']}, master weights "
                     f"{recipe_flags.get('master_weights', 'fp32')}: {recipe[1]}")
    master = recipe_flags.get("master_weights")
    remainder_src = tables.MASTER_REMAINDER_STACKS.get(stack)
    if master is None and remainder_src and precision in ("bf16", "fp8"):
        master = "remainder"
        notes.append(f"16-bit master-weight remainders (--master-weights remainder): {remainder_src}")
    if master:
        eargs += ["--master-weights", master]
        plan.append(f"master-{master}")
    eargs += ["--recompute", recompute, "--precision", precision]
    plan += [f"rc-{recompute}" + (f"({modules})" if modules else ""), precision]
    if modules:
        eargs += ["--recompute-modules", modules]
    if arch == "resnet" and "deeplearningexamples" in " ".join(era.source_texts(row)).lower():
        fmt = resnet_memory_format(row, precision, notes)
        eargs += ["--memory-format", fmt]
        plan.append(fmt)
    if attention:
        eargs += ["--attention", attention]
        plan.append(attention)
    gpn = pos_int(row, "hardware", "gpus_per_node")
    node = profile_node_size(os.path.join(repo_root, profile_path))
    if gpn and node and gpn != node:
        eargs += ["--gpus-per-node", str(gpn)]
        notes.append(f"gpus_per_node {gpn} differs from the profile's {node}")
    if framework:
        eargs += ["--framework", framework]
        plan.append(framework)
    eargs.append("--json")
    plan.append(f"@{profile}")
    eff = {"gbs": gbs, "mbs": mbs, "seq": seq, "num_gpus": n, "layers": shape.get("layers"),
           "hidden": shape.get("hidden"), "vocab": shape.get("vocab"), "profile": profile,
           "precision": precision, "stack": stack, "recompute": recompute, "model_key": re.sub(r"-b\d+(?=-|$)", "", stem)}
    return Mapping(arch=arch, model_args=margs, model_stem=stem, estimate_args=eargs,
                   plan=" ".join(plan), notes=notes, eff=eff)
