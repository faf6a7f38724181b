"""Leave-one-source-group-out validation of the run-derived profile numbers.

For each source group G (in first-seen order): every fit of tools/fits.json
whose training groups include G is fitted again on its rows of the other
groups (fits.run_fit), or, when no row of another group is left, takes its
params' fallbacks (the datasheet / microbenchmark value the number would
have without runs). The fits are applied in file order, each starting from
the profiles the previous ones left. G's compared rows are then estimated
with those profiles. A group no fit was trained on keeps its in-sample
result (its profiles are the committed ones), so nothing is re-run for it.

The estimator is injected (see fits.Estimator), so the logic is tested on
invented rows with a stand-in. Standard library only.
"""

from . import fits as fitlib
from . import stats


def group_order(results):
    seen = []
    for r in results:
        if r["group"] not in seen:
            seen.append(r["group"])
    return seen


def _summary(errs):
    a = [abs(e) for e in errs]
    return {"mean_abs_error_pct": stats.mean(a), "p90_abs_error_pct": stats.nearest_rank(a, 90),
            "mean_signed_error_pct": stats.mean(errs)}


def cross_validate(results, fits, profiles, estimate, log=None):
    """RESULTS: validate-published rows (in-sample, predicted_s filled);
    FITS: fits.load's list; PROFILES: {stem: committed profile dict} for every
    profile the fits touch. Sets held_out_predicted_s / held_out_error_pct on
    the compared rows and returns the summary dict."""
    compared = [r for r in results if r["outcome"] == "compared"]
    groups = {}
    for g in group_order(compared):
        rows = [r for r in compared if r["group"] == g]
        profs, refits = profiles, []
        for f in fits:
            if g not in f["groups"]:
                continue
            rest = [x for x in f["groups"] if x != g]
            train = fitlib.training_rows(f, results, rest)
            if train:
                values, m = fitlib.run_fit(f, train, profs, estimate, log)
                how = "refit"
            else:
                values, m = fitlib.fallback_values(f), None
                how = "fallback"
            refits.append({"fit": f["name"], "how": how, "trained_on": rest if train else [],
                           "training_rows": len(train), "training_mean_abs_error_pct": m, "values": values,
                           "committed": {fitlib.param_label(p): p["value"] for p in f["params"]}})
            profs = fitlib.write_values(f, values, profs)
        pred = estimate(rows, profs) if refits else {r["id"]: r["predicted_s"] for r in rows}
        for r in rows:
            p = pred.get(r["id"])
            r["held_out_predicted_s"] = p
            r["held_out_error_pct"] = None if p is None else stats.error_pct(p, r["measured_s"])
        ok = [r for r in rows if r["held_out_error_pct"] is not None]
        groups[g] = {"rows": len(rows), "held_out_rows": len(ok), "refits": refits,
                     "in_sample": _summary([r["error_pct"] for r in rows]),
                     "held_out": _summary([r["held_out_error_pct"] for r in ok])}
    ok = [r for r in compared if r.get("held_out_error_pct") is not None]
    return {"method": "leave one source group out", "groups": groups,
            "overall": {"rows": len(compared), "held_out_rows": len(ok),
                        "in_sample": _summary([r["error_pct"] for r in compared]),
                        "held_out": _summary([r["held_out_error_pct"] for r in ok])}}
