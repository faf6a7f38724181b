#!/usr/bin/env python3
"""Writes nccl_tests_dgx_a100.txt: a HAND-MADE sample in the output format of
nccl-tests 2.x (NVIDIA/nccl-tests, e.g. 2.13: "# nThread ..." header, device
lines "#  Rank  N Group  0 Pid P on HOST device D [BUS] NAME", the 13-column
table "size count type redop root time algbw busbw #wrong" out-of-place then
in-place, "# Avg bus bandwidth" footer). It was NOT measured: the times come
from the smooth model below, chosen to look like a DGX A100 (8x A100-SXM4-80GB
on NVSwitch; two nodes over 8x HDR InfiniBand), with a fixed 1-2 % wobble so
that the rows are not exactly on a curve. The parser and fitting tests read it.

    t(S) = steps * alpha + factor * S / (B * e(S)),  e(S) = E * S / (S + S_half)

Regenerate: python3 tests/calibrate/data/make_nccl_sample.py > tests/calibrate/data/nccl_tests_dgx_a100.txt
"""
import math

RUNS = [
    # test, collective, ranks, ranks per host, type, redop, root, alpha us, B GB/s, E, S_half
    ("all_reduce_perf", "all_reduce", 8, 8, "float", "sum", -1, 2.5, 300, 0.78, 2e6),
    ("all_gather_perf", "all_gather", 8, 8, "float", "none", -1, 2.2, 300, 0.80, 1e6),
    ("reduce_scatter_perf", "reduce_scatter", 8, 8, "float", "sum", -1, 2.4, 300, 0.79, 1e6),
    ("alltoall_perf", "all_to_all", 8, 8, "float", "none", -1, 9.0, 300, 0.55, 4e6),
    ("broadcast_perf", "broadcast", 8, 8, "float", "none", 0, 3.0, 300, 0.70, 2e6),
    ("all_reduce_perf", "all_reduce", 16, 8, "float", "sum", -1, 4.0, 200, 0.92, 8e6),
]
WOBBLE = [1.00, 1.012, 0.991, 1.017, 0.986, 1.008, 0.995, 1.014, 0.989, 1.006, 1.0]
BUSIDS = ["0x07", "0x0b", "0x48", "0x4c", "0x88", "0x8b", "0xc8", "0xcb"]


def shape(coll, n):
    if coll == "all_reduce":
        return 2 * (n - 1) / n, 2 * (n - 1)
    if coll in ("all_gather", "reduce_scatter"):
        return (n - 1) / n, n - 1
    if coll == "all_to_all":
        return (n - 1) / n, 1
    return 1.0, n - 1


def tstr(us):
    if us < 100:
        return "%7.2f" % us
    if us < 10000:
        return "%7.1f" % us
    return "%7.0f" % us


def run(test, coll, n, per_host, typ, redop, root, alpha, bw, top, half, pid0):
    out = []
    out.append("# Collective test starting: %s" % test)
    out.append("# nThread 1 nGpus 1 minBytes 1024 maxBytes 1073741824 step: 4(factor) warmup iters: 5 iters: 20 "
               "agg iters: 1 validation: 1 graph: 0")
    out.append("#")
    out.append("# Using devices")
    for r in range(n):
        host = "dgx-a100-%02d" % (r // per_host + 1)
        out.append("#  Rank %2d Group  0 Pid %6d on %s device  %d [%s] NVIDIA A100-SXM4-80GB"
                   % (r, pid0 + r, host, r % per_host, BUSIDS[r % per_host]))
    out.append("#")
    out.append("#                                                              out-of-place                       in-place          ")
    out.append("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong")
    out.append("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ")
    factor, steps = shape(coll, n)
    per_rank_count = coll in ("all_gather", "reduce_scatter", "all_to_all")
    total = 0.0
    rows = 0
    for i in range(11):
        size = 1024 * 4 ** i
        e = top * size / (size + half)
        t = steps * alpha + factor * size / (bw * 1e3 * e)  # us (GB/s = 1e3 B/us)
        t *= WOBBLE[i]
        t_ip = t * WOBBLE[(i + 3) % len(WOBBLE)]
        count = size // 4 // (n if per_rank_count else 1)
        cols = []
        for tt in (t, t_ip):
            algbw = size / tt / 1e3
            busbw = algbw * factor
            cols.append("%s  %6.2f  %6.2f  %5s" % (tstr(tt), algbw, busbw, "0"))
            if tt is t:
                total += busbw
        rows += 1
        out.append("%12d  %12d  %8s  %6s  %6d  %s  %s" % (size, count, typ, redop, root, cols[0], cols[1]))
    out.append("# Out of bounds values : 0 OK")
    out.append("# Avg bus bandwidth    : %g " % round(total / rows, 4))
    out.append("#")
    out.append("")
    return out


lines = []
for k, spec in enumerate(RUNS):
    lines += run(*spec, pid0=41000 + 100 * k)
print("\n".join(lines), end="")
