"""Ranking fidelity and error by scale.

A ranking set is every compared row with the same source group, model
(shape without the micro-batch), profile, GPU count, global batch and
precision: rows that differ only in layout (tp/pp/dp, micro-batch, ZeRO,
recompute, ...). For each set of at least MIN_SET_ROWS rows:

- Kendall's tau-b between predicted and measured seconds per step
  (Kendall 1945, "The treatment of ties in ranking problems"):
  tau_b = (C - D) / sqrt((P - Tx) (P - Ty)), P = n(n-1)/2 pairs, C and D
  the concordant and discordant pairs, Tx and Ty the pairs tied in the
  prediction and in the measurement. 1 = same order, -1 = reversed; None
  when either side is all ties.
- top-1 regret: measured time of the row predicted fastest over the
  measured fastest, minus 1, in percent (0 = the planner would have picked
  the measured best). When several rows tie for the predicted best, the
  slowest of them counts (a planner that cannot tell them apart may pick any).

- noise ceiling: the expected tau and top-1 regret of a predictor that knew
  each layout's true mean time, when every measurement scatters as the
  source's own repeated runs show (noise_ceiling). A set whose ceiling is
  below a target cannot meet it by any model: the order its rows were
  measured in is partly the measurement noise.

Scale buckets: signed and absolute mean error of compared rows by GPU count.
"""

import math
import random

MIN_SET_ROWS = 3

# (label, lowest GPU count, highest or None = no bound)
SCALE_BUCKETS = [("1-8", 1, 8), ("9-64", 9, 64), ("65-512", 65, 512), (">512", 513, None)]


def _mean(values):
    return sum(values) / len(values) if values else None


def _sign(x):
    return (x > 0) - (x < 0)


def kendall_tau_b(xs, ys):
    """Kendall's tau-b of two equally long sequences; None when undefined
    (fewer than two items, or one side all ties)."""
    n = len(xs)
    if n != len(ys):
        raise ValueError("kendall_tau_b: sequences differ in length")
    concordant = discordant = tied_x = tied_y = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = _sign(xs[i] - xs[j]), _sign(ys[i] - ys[j])
            if dx == 0:
                tied_x += 1
            if dy == 0:
                tied_y += 1
            if dx and dy:
                if dx == dy:
                    concordant += 1
                else:
                    discordant += 1
    pairs = n * (n - 1) // 2
    denom = math.sqrt((pairs - tied_x) * (pairs - tied_y))
    if denom == 0:
        return None
    return (concordant - discordant) / denom


def top1_regret_pct(predicted, measured):
    """(regret %, index of the predicted best, index of the measured best)."""
    if not predicted or len(predicted) != len(measured):
        raise ValueError("top1_regret_pct: need equally long, non-empty sequences")
    best_pred = min(predicted)
    ties = [i for i, p in enumerate(predicted) if p == best_pred]
    picked = max(ties, key=lambda i: measured[i])
    best = min(range(len(measured)), key=lambda i: measured[i])
    return (measured[picked] / measured[best] - 1.0) * 100.0, picked, best


def repeat_spread(rows):
    """(layouts measured more than once, largest (max / min - 1) x 100 over
    their measured times or None): the measurement noise of a set, as the
    source's repeated runs of one layout show it. A layout is a row's
    `plan` text."""
    runs = {}
    for r in rows:
        if r.get("plan") is not None:
            runs.setdefault(r["plan"], []).append(r["measured_s"])
    spreads = [100.0 * (max(v) / min(v) - 1.0) for v in runs.values() if len(v) > 1]
    return len(spreads), (max(spreads) if spreads else None)


NOISE_DRAWS = 2000      # Monte Carlo draws of noise_ceiling
NOISE_SEED = 1945       # fixed: the report is the same on every run


def repeat_sigma(rows):
    """(sigma, degrees of freedom) of the measurement noise the rows' repeated
    layouts show: the pooled relative standard deviation
    sqrt(sum over layouts measured n >= 2 times of sum (x / mean - 1)^2 / sum (n - 1)),
    a layout being (rank_set, plan); (None, 0) with no repeated layout."""
    runs = {}
    for r in rows:
        if r.get("plan") is not None and r.get("rank_set"):
            runs.setdefault((r["rank_set"], r["plan"]), []).append(r["measured_s"])
    ss = dof = 0
    for v in runs.values():
        if len(v) > 1:
            m = sum(v) / len(v)
            ss += sum((x / m - 1.0) ** 2 for x in v)
            dof += len(v) - 1
    return (math.sqrt(ss / dof), dof) if dof else (None, 0)


def noise_ceiling(truth, sigma, draws=NOISE_DRAWS, seed=NOISE_SEED):
    """(expected Kendall tau-b, expected top-1 regret %) of a predictor that
    predicts `truth` exactly, when each measured time is truth x (1 + e),
    e ~ N(0, sigma) independently. Rows of one layout share a truth (they tie
    in its prediction). Seeded Monte Carlo: deterministic."""
    rng = random.Random(seed)
    taus, regrets = [], []
    for _ in range(draws):
        meas = [t * (1.0 + rng.gauss(0.0, sigma)) for t in truth]
        tau = kendall_tau_b(truth, meas)
        if tau is not None:
            taus.append(tau)
        regrets.append(top1_regret_pct(truth, meas)[0])
    return _mean(taus), _mean(regrets)


def ranking_sets(results):
    """The ranking sets of a list of results (those with outcome 'compared'
    and a rank_set key), each a dict; sets in first-seen order."""
    by_key, by_group = {}, {}
    for r in results:
        if r.get("outcome") == "compared" and r.get("rank_set"):
            by_key.setdefault(r["rank_set"], []).append(r)
            by_group.setdefault(r["group"], []).append(r)
    sigma_of = {g: repeat_sigma(rs)[0] for g, rs in by_group.items()}
    out = []
    for key, rs in by_key.items():
        if len(rs) < MIN_SET_ROWS:
            continue
        pred = [r["predicted_s"] for r in rs]
        meas = [r["measured_s"] for r in rs]
        regret, picked, best = top1_regret_pct(pred, meas)
        repeated, spread = repeat_spread(rs)
        sigma = sigma_of.get(rs[0]["group"])
        ceiling = (None, None)
        if sigma is not None:
            runs = {}  # a layout's measured times (a row without plan text is its own layout)
            for r in rs:
                runs.setdefault(r.get("plan") or r["id"], []).append(r["measured_s"])
            truth = [_mean(runs[r.get("plan") or r["id"]]) for r in rs]
            ceiling = noise_ceiling(truth, sigma)
        out.append({
            "set": key, "group": rs[0]["group"], "rows": len(rs), "ids": [r["id"] for r in rs],
            "kendall_tau": kendall_tau_b(pred, meas), "top1_regret_pct": regret,
            "predicted_best": rs[picked]["id"], "measured_best": rs[best]["id"],
            "repeated_layouts": repeated, "repeat_spread_pct": spread,
            "noise_sigma_pct": None if sigma is None else 100.0 * sigma,
            "noise_ceiling_tau": ceiling[0], "noise_ceiling_regret_pct": ceiling[1],
        })
    return out


def ranking_summary(results):
    sets = ranking_sets(results)
    taus = [s["kendall_tau"] for s in sets if s["kendall_tau"] is not None]
    worst = max(sets, key=lambda s: s["top1_regret_pct"], default=None)
    return {
        "min_set_rows": MIN_SET_ROWS,
        "set_count": len(sets),
        "rows_in_sets": sum(s["rows"] for s in sets),
        "mean_kendall_tau": _mean(taus),
        "worst_top1_regret_pct": None if worst is None else worst["top1_regret_pct"],
        "worst_top1_regret_set": None if worst is None else worst["set"],
        "mean_noise_ceiling_tau": _mean([s["noise_ceiling_tau"] for s in sets
                                         if s["kendall_tau"] is not None and s["noise_ceiling_tau"] is not None]),
        "sets": sets,
    }


def bucket_of(num_gpus):
    for label, lo, hi in SCALE_BUCKETS:
        if num_gpus >= lo and (hi is None or num_gpus <= hi):
            return label
    return None


def scale_buckets(results):
    """One entry per bucket (all buckets, empty ones with rows 0)."""
    by = {label: [] for label, _, _ in SCALE_BUCKETS}
    for r in results:
        n = r.get("num_gpus")
        if r.get("outcome") == "compared" and isinstance(n, int) and n > 0:
            by[bucket_of(n)].append(r["error_pct"])
    return [{"bucket": label, "rows": len(by[label]), "mean_signed_error_pct": _mean(by[label]),
             "mean_abs_error_pct": _mean([abs(e) for e in by[label]])} for label, _, _ in SCALE_BUCKETS]
