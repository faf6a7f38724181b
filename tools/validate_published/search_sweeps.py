"""Published sweeps in `--search` mode: did the search pick a layout the
source measured, and how did it rank there?

A sweep is a ranking set (mapping.rank_set: same source group, model shape,
profile, GPU count, global batch and precision; rows that differ only in
layout) with at least MIN_ROWS compared rows that carry a measured time.
Every row of a sweep asks the search the same question, so the searched
layouts of its rows are collected (normally one). Where the sweep has the
searched layout (the same `short_layout` text as a published row's), its
measured time, its rank among the sweep's measured times and the measured
regret (its time over the sweep's fastest, minus 1) are reported: the
search's pick judged by the source's own measurements. Otherwise the sweep
cannot judge it, and the report says so with the searched layout's
prediction beside the prediction of the sweep's measured fastest.

Standard library only.
"""

MIN_ROWS = 2


def sweeps(results):
    """One dict per sweep, in first-row order (see the module docstring)."""
    sets = {}
    for r in results:
        if r.get("outcome") != "compared" or r.get("rank_set") is None or r.get("measured_s") is None:
            continue
        sets.setdefault(r["rank_set"], []).append(r)
    out = []
    for name, rows in sets.items():
        if len(rows) < MIN_ROWS:
            continue
        by_time = sorted(rows, key=lambda r: r["measured_s"])
        best = by_time[0]
        searched = []
        for r in rows:
            if r.get("search_layout") and r["search_layout"] not in [s["layout"] for s in searched]:
                searched.append({"layout": r["search_layout"], "predicted_s": r.get("search_s")})
        for s in searched:
            hits = [r for r in by_time if r.get("published_layout") == s["layout"]]
            if hits:
                hit = hits[0]  # the fastest measurement of that layout
                s["in_sweep"] = True
                s["measured_s"] = hit["measured_s"]
                s["measured_id"] = hit["id"]
                s["measured_rank"] = 1 + sum(1 for r in by_time if r["measured_s"] < hit["measured_s"])
                s["measured_regret_pct"] = 100.0 * (hit["measured_s"] / best["measured_s"] - 1.0)
            else:
                s["in_sweep"] = False
        out.append({
            "set": name,
            "rows": len(rows),
            "measured_best_id": best["id"],
            "measured_best_layout": best.get("published_layout"),
            "measured_best_s": best["measured_s"],
            "measured_best_predicted_s": best.get("published_s"),
            "searched": searched,
        })
    return out


def summary(sw):
    """Counts over sweeps(): how many, how many had the searched layout, and
    the worst measured regret among those."""
    judged = [s for x in sw for s in x["searched"] if s.get("in_sweep")]
    worst = max(judged, key=lambda s: s["measured_regret_pct"], default=None)
    return {
        "sweeps": len(sw),
        "searched_layouts": sum(len(x["searched"]) for x in sw),
        "in_sweep": len(judged),
        "worst_measured_regret_pct": None if worst is None else worst["measured_regret_pct"],
        "worst_measured_regret_id": None if worst is None else worst["measured_id"],
    }


def markdown(sw, fmt_s):
    """The report's section (a list of lines)."""
    s = summary(sw)
    out = ["## Published sweeps", "",
           "Rows that differ only in layout (same source group, model, profile, GPU count, global batch and "
           f"precision; at least {MIN_ROWS} compared rows with a measured time) ask the search one question. "
           "Where the source measured the layout the search picked, its measured time ranks it among the "
           "sweep's; measured regret = its measured time over the sweep's fastest, minus 1. Otherwise the sweep "
           "cannot judge the pick: the searched layout's prediction stands beside the prediction of the "
           "sweep's measured fastest.", ""]
    if not sw:
        return out + ["None."]
    out.append(f"{s['sweeps']} sweeps; the searched layout is in the sweep for {s['in_sweep']} of "
               f"{s['searched_layouts']} searched layouts"
               + ("" if s["worst_measured_regret_pct"] is None else
                  f"; worst measured regret {s['worst_measured_regret_pct']:.1f} % ({s['worst_measured_regret_id']})")
               + ".")
    out += ["", "| sweep | rows | measured fastest (s, predicted s) | searched layout (predicted s) | in the sweep |",
            "|---|---|---|---|---|"]
    for x in sw:
        for s_ in x["searched"]:
            if s_.get("in_sweep"):
                verdict = (f"yes: measured {fmt_s(s_['measured_s'])} s, rank {s_['measured_rank']} of {x['rows']}, "
                           f"regret {s_['measured_regret_pct']:+.1f} %")
            else:
                verdict = "no (not measured by the source)"
            cells = [x["set"].replace("|", "\\|"), str(x["rows"]),
                     f"{x['measured_best_layout']} ({fmt_s(x['measured_best_s'])}, {fmt_s(x['measured_best_predicted_s'])})",
                     f"{s_['layout']} ({fmt_s(s_['predicted_s'])})", verdict]
            out.append("| " + " | ".join(cells) + " |")
    return out
