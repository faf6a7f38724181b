#!/usr/bin/env python3
"""Regression gate on the published-runs validation (issue: cost model).

Runs tools/validate-published on ../shared/validation/published_runs.json with
the built planner and fails when the figures fall behind what main reached.
The bounds are the figures at the time of writing plus a small margin, so a
change that makes predictions worse fails the build; tighten them as the
model improves (docs/validation-published.md has the current figures).

Usage: gate.py PLANNER_BIN REPO_ROOT SHARED_DIR [--dense-only]
--dense-only (the sanitizer build): the MoE rows are skipped and their
bounds not checked; their 70k-120k-op graphs take minutes each there, and
the default build checks their figures.
"""
import json
import os
import subprocess
import sys

# Bounds (current figures in parentheses).
MIN_EVALUATED = 188          # rows evaluated (190 of 195)
MAX_MEAN_ABS_PCT = 4.35      # mean |error| (4.25 %; 4.37 % before the older libraries' pipeline p2p and tied embeddings)
MAX_P90_ABS_PCT = 9.5        # 90th percentile |error| (9.05 %; 10.21 % before the older libraries' pipeline p2p and tied embeddings)
MAX_ABOVE_20 = 2             # rows above 20 % (2)
MIN_OOM_AGREE = 2            # OOM rows predicted not to fit (2 of 3; L957 sits with rows that trained)
MAX_FITS_DISAGREE = 0        # trained rows predicted not to fit (none: Nemotron-340B fits with its recipe's bf16 optimizer)
MAX_MEMORY_MEAN_ABS_PCT = 6.0  # memory mean |error| over rows with a measured peak (5.64 %, n = 33)
# Ranking: 4 BLOOM sets. With the Jean Zay NVLink bandwidth the README's
# 100 GB/s the 3-row h12288 set came out reversed (tau 0.560 -> 0.215). DeepSpeed's
# pipeline p2p as its engine runs it (1/tp slices all-gathered on receipt, and
# synchronous sends that hold the sender: docs/estimate.md) brought it back:
# tau 0.564, worst regret 11.2 % (the same set: tp8 pp6 at micro-batch 2 is
# predicted 0.2 % faster than at 4, measured 11 % slower). The noise ceiling of the sets is 0.826
# (docs/validation-published.md).
MIN_MEAN_TAU = 0.5           # mean Kendall tau-b over same-model sets of >= 3 rows (0.564, 4 sets)
MAX_TOP1_REGRET_PCT = 12.0   # worst top-1 regret of those sets (11.2 %)
MAX_BUCKET_SIGNED_PCT = 3.0  # |signed mean error| of every GPU-count bucket (largest 2.74 %, 9-64 GPUs)
# The bounds above hold for the dense rows; the MoE rows (planner model moe /
# llama-moe, first evaluated at 193 of 195) are tracked apart until the MoE
# layer's router and dispatcher overheads are modelled (docs/estimate.md):
MIN_MOE_EVALUATED = 3        # MoE rows evaluated (3: GPT-OSS-120B x2, Qwen3-30B-A3B; Qwen3-235B needs ep over tp)
MAX_MOE_MEAN_ABS_PCT = 25.0  # their mean |error| (23.8 %: -14.6, +7.9, -48.9 %)
MAX_MOE_FITS_DISAGREE = 2    # trained MoE rows predicted not to fit (2)
MOE_ARCHS = ("moe", "llama-moe")  # the `planner model` architectures of those rows
# Held out (--cross-validate: every run-fitted profile number refitted without
# the group it predicts, or its fallback where no other group trained it),
# all rows. Not checked under --dense-only (the MoE rows are part of it).
MAX_HELD_OUT_MEAN_ABS_PCT = 8.5  # (8.20 %; 8.6 % before llm-foundry's Triton attention fell back to FlashAttention-1's bars)
MAX_HELD_OUT_P90_ABS_PCT = 18.0  # (17.41 %; 19.1 % before)


def main():
    planner, root, shared = sys.argv[1:4]
    dense_only = "--dense-only" in sys.argv[4:]
    runs = os.path.join(shared, "validation", "published_runs.json")
    if not os.path.exists(runs):
        print(f"gate: {runs} not found; skipping")
        return 0
    skip = [x for arch in MOE_ARCHS for x in ("--skip-arch", arch)] if dense_only else []
    cross = [] if dense_only else ["--cross-validate"]
    out = subprocess.run([sys.executable, os.path.join(root, "tools", "validate-published"), runs,
                          "--planner", planner, "--json"] + skip + cross, capture_output=True, text=True, cwd=root)
    if out.returncode != 0:
        print(out.stderr)
        return 1
    result = json.loads(out.stdout)
    summary = result["summary"]
    ranking = summary["ranking"]
    sys.path.insert(0, os.path.join(root, "tools"))
    from validate_published.fits import row_arch  # the harness's own definitions
    from validate_published.stats import summarize
    s = summarize([r for r in result["rows"] if row_arch(r) not in MOE_ARCHS])
    m = summarize([r for r in result["rows"] if row_arch(r) in MOE_ARCHS])
    worst_bucket = max(abs(b["mean_signed_error_pct"]) for b in summary["scale_buckets"] if b["rows"])
    checks = [
        ("rows evaluated (dense)", s["evaluated"], ">=", MIN_EVALUATED),
        ("mean |error| %", s["mean_abs_error_pct"], "<=", MAX_MEAN_ABS_PCT),
        ("p90 |error| %", s["p90_abs_error_pct"], "<=", MAX_P90_ABS_PCT),
        ("rows above 20 %", len(s["above_threshold"]), "<=", MAX_ABOVE_20),
        ("OOM rows predicted not to fit", s["oom_agree"], ">=", MIN_OOM_AGREE),
        ("trained rows predicted not to fit", len(s["fits_disagreements_ok_rows"]), "<=", MAX_FITS_DISAGREE),
        ("memory mean |error| %", s["memory_mean_abs_error_pct"], "<=", MAX_MEMORY_MEAN_ABS_PCT),
        ("mean Kendall tau (same-model sets)", ranking["mean_kendall_tau"], ">=", MIN_MEAN_TAU),
        ("worst top-1 regret %", ranking["worst_top1_regret_pct"], "<=", MAX_TOP1_REGRET_PCT),
        ("largest |signed error| of a GPU-count bucket %", worst_bucket, "<=", MAX_BUCKET_SIGNED_PCT),
    ]
    if not dense_only:
        checks += [
            ("MoE rows evaluated", m["evaluated"], ">=", MIN_MOE_EVALUATED),
            ("MoE mean |error| %", m["mean_abs_error_pct"] if m["mean_abs_error_pct"] is not None else 1e9, "<=",
             MAX_MOE_MEAN_ABS_PCT),
            ("trained MoE rows predicted not to fit", len(m["fits_disagreements_ok_rows"]), "<=",
             MAX_MOE_FITS_DISAGREE),
        ]
        held_out = result["cross_validation"]["overall"]["held_out"]
        checks += [
            ("held-out mean |error| % (all rows)", held_out["mean_abs_error_pct"], "<=", MAX_HELD_OUT_MEAN_ABS_PCT),
            ("held-out p90 |error| % (all rows)", held_out["p90_abs_error_pct"], "<=", MAX_HELD_OUT_P90_ABS_PCT),
        ]
    failed = 0
    for name, value, op, bound in checks:
        ok = value >= bound if op == ">=" else value <= bound
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {value:.4g} (bound {op} {bound})")
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
