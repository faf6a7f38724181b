"""The measured quantity of a row: seconds per optimizer step.

measured_iteration() tries, in order: measured.iteration_time_s;
derived.iteration_time_s; global-batch tokens over token throughput; global
batch over sample throughput; TFLOP/s per GPU with the source's own FLOP
convention. It returns (seconds, method) or (None, why not).
"""

from .mapping import as_pos_float, get, pos_int


def megatron_hw_flops(B, s, l, h, V):
    """Megatron SC'21 Eq. 3, FLOPs of one step with full recompute:
    96 B s l h^2 (1 + s/(6h) + V/(16 l h))."""
    return 96.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * l * h))


def model_flops(B, s, l, h, V):
    """Model FLOPs of one step (no recompute): 72 B s l h^2 (1 + s/(6h) + V/(12 l h))."""
    return 72.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (12.0 * l * h))


def hardware_flops(B, s, l, h, V, recompute):
    """(FLOPs of one step counting recomputation, formula text) for a source
    whose TFLOP/s include recompute FLOPs, by the row's recompute mode:
    full -> Megatron Eq. 3 (one extra forward of every layer); selective ->
    model FLOPs + the recomputed attention core, 4 B s^2 l h (QK^T and AV
    forward, 2 B s^2 h each per layer; Korthikanti et al. 2022, section 5);
    none -> model FLOPs (nothing is recomputed, HFU = MFU)."""
    if recompute == "selective":
        return (model_flops(B, s, l, h, V) + 4.0 * B * s * s * l * h,
                "72Bslh^2(1+s/6h+V/12lh) + 4Bs^2lh (model FLOPs + recomputed attention core, selective recompute)")
    if recompute == "none":
        return model_flops(B, s, l, h, V), "72Bslh^2(1+s/6h+V/12lh) (recompute-inclusive convention, no recompute)"
    return megatron_hw_flops(B, s, l, h, V), "96Bslh^2(1+s/6h+V/16lh) (Megatron Eq. 3)"


def measured_iteration(row, eff):
    """(seconds, method) or (None, reason). eff: Mapping.eff (effective gbs,
    seq, num_gpus, layers, hidden, vocab: filled configs and assumptions included)."""
    t = as_pos_float(get(row, "measured", "iteration_time_s"))
    if t:
        return t, "measured.iteration_time_s"
    t = as_pos_float(get(row, "derived", "iteration_time_s"))
    if t:
        how = get(row, "derived", "method")
        return t, "derived.iteration_time_s" + (f" ({how})" if isinstance(how, str) and how else "")
    gbs, seq, n = eff.get("gbs"), eff.get("seq"), eff.get("num_gpus")
    tokens = pos_int(row, "training", "global_batch_tokens")
    tok_how = "global_batch_tokens"
    if tokens is None and gbs and seq:
        tokens, tok_how = gbs * seq, "global_batch_size x seq_len"
    tps_gpu = as_pos_float(get(row, "measured", "tokens_per_s_per_gpu"))
    tps = as_pos_float(get(row, "measured", "tokens_per_s"))
    if tokens and tps_gpu and n:
        return tokens / (tps_gpu * n), f"{tok_how} / (tokens_per_s_per_gpu x num_gpus)"
    if tokens and tps:
        return tokens / tps, f"{tok_how} / tokens_per_s"
    sps = as_pos_float(get(row, "measured", "samples_per_s"))
    if gbs and sps:
        return gbs / sps, "global batch / samples_per_s"
    tflops = as_pos_float(get(row, "measured", "tflops_per_gpu"))
    conv = get(row, "measured", "tflops_includes_recompute")
    mfu, peak = as_pos_float(get(row, "measured", "mfu")), as_pos_float(get(row, "measured", "peak_tflops_used"))
    mfu_note = ""
    if tflops is None and mfu and peak:
        tflops, conv, mfu_note = mfu * peak, False, " (tflops_per_gpu = mfu x peak_tflops_used)"
    if tflops and n and gbs:
        l, h, V = eff.get("layers"), eff.get("hidden"), eff.get("vocab")
        params_b = as_pos_float(get(row, "model", "params_b"))
        if conv is None:
            return None, "tflops_per_gpu given but its FLOP convention (tflops_includes_recompute) is not"
        if l and h and V and seq:
            if conv:
                F, how = hardware_flops(gbs, seq, l, h, V, eff.get("recompute", "full"))
            else:
                F, how = model_flops(gbs, seq, l, h, V), "72Bslh^2(1+s/6h+V/12lh) (model FLOPs)"
        elif params_b and seq:
            k = 8.0 if conv and eff.get("recompute", "full") == "full" else 6.0
            F, how = k * params_b * 1e9 * gbs * seq, f"{int(k)} x params x tokens"
        else:
            return None, "tflops_per_gpu given but the model shape to count FLOPs is not"
        return F / (n * tflops * 1e12), f"F / (num_gpus x tflops_per_gpu), F = {how}{mfu_note}"
    return None, "no iteration-level measurement (iteration time, throughput or TFLOP/s)"
