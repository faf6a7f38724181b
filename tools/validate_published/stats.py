"""Error arithmetic and the per-group summaries.

A result is a dict (see report.py's JSON field list). Errors are signed
percentages, (predicted - measured) / measured x 100.
"""

import math

from . import ranking

THRESHOLD_PCT = 20.0


def error_pct(predicted, measured):
    return (predicted - measured) / measured * 100.0


def mean(values):
    return sum(values) / len(values) if values else None


def nearest_rank(values, p):
    """The p-th percentile by the nearest-rank method: the smallest value with
    at least p % of the values at or below it (rank ceil(p/100 x n))."""
    if not values:
        return None
    s = sorted(values)
    k = max(1, math.ceil(p / 100.0 * len(s)))
    return s[k - 1]


def summarize(results):
    """Summary dict of a list of results (one group or all)."""
    compared = [r for r in results if r["outcome"] == "compared"]
    oom = [r for r in results if r["outcome"] == "oom_checked"]
    errs = [abs(r["error_pct"]) for r in compared]
    worst = max(compared, key=lambda r: abs(r["error_pct"]), default=None)
    above = [r["id"] for r in compared if abs(r["error_pct"]) > THRESHOLD_PCT]
    fits_known = [r for r in compared if r.get("fits") is not None]
    mem = [abs(r["memory_error_pct"]) for r in results if r.get("memory_error_pct") is not None]
    return {
        "rows": len(results),
        "evaluated": len(compared) + len(oom),
        "time_compared": len(compared),
        "skipped": sum(1 for r in results if r["outcome"] == "skipped"),
        "failed": sum(1 for r in results if r["outcome"] == "failed"),
        "mean_abs_error_pct": mean(errs),
        "mean_signed_error_pct": mean([r["error_pct"] for r in compared]),
        "p90_abs_error_pct": nearest_rank(errs, 90),
        "worst": None if worst is None else {"id": worst["id"], "error_pct": worst["error_pct"]},
        "above_threshold": above,
        "threshold_pct": THRESHOLD_PCT,
        "oom_rows": len(oom),
        "oom_agree": sum(1 for r in oom if r.get("fits") is False),
        "fits_checked_ok_rows": len(fits_known),
        "fits_disagreements_ok_rows": [r["id"] for r in fits_known if r["fits"] is not True],
        "memory_rows": len(mem),
        "memory_mean_abs_error_pct": mean(mem),
    }


def summaries(results):
    """{"overall": ..., "groups": {group: ...}, "ranking": ..., "scale_buckets": [...]}
    with groups in first-seen order (ranking.py: ranking sets and scale buckets)."""
    groups = {}
    for r in results:
        groups.setdefault(r["group"], []).append(r)
    return {"overall": summarize(results), "groups": {g: summarize(rs) for g, rs in groups.items()},
            "ranking": ranking.ranking_summary(results), "scale_buckets": ranking.scale_buckets(results)}
