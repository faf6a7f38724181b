"""Text, dry-run and Markdown output of a `--search` run (search_check.py)."""

from . import search_check as sc
from . import search_sweeps
from .report import columns, fmt_s, md_table, shell


def fmt_ratio(x):
    return "-" if x is None else f"{x:.4f}"


def fmt_fits(v):
    return "?" if v is None else ("yes" if v else "NO")


VERDICT_TEXT = {"no_worse": "no worse", "worse": "WORSE", "published_unfit": "better (published does not fit)",
                "search_unfit": "SEARCH PLAN DOES NOT FIT", None: "-"}


def summary_lines(s):
    worst = "-" if s["worst"] is None else f"{fmt_ratio(s['worst']['ratio'])} ({s['worst']['id']})"
    med, mx = s["search_wall_s_median"], s["search_wall_s_max"]
    return [
        ("rows (after --group)", str(s["rows"])),
        ("compared (estimate and search both ran)", str(s["compared"])),
        ("no worse (search <= published x (1 + 1e-9), or the published layout does not fit)",
         f"{s['no_worse']} of {s['compared']}"
         + (f" ({s['no_worse'] - s['no_worse_by_time']} only because the published layout does not fit)"
            if s["no_worse"] != s["no_worse_by_time"] else "")),
        ("worse", str(len(s["worse"])) + (f": {', '.join(s['worse'])}" if s["worse"] else "")),
        ("worst ratio search / published (rows whose published layout fits)", worst),
        ("geometric mean of that ratio", fmt_ratio(s["ratio_geomean"])),
        ("search found no fitting plan / errored", str(len(s["search_failed"]))),
        ("searched plans that do not fit", str(len(s["search_unfit"]))
         + (f": {', '.join(s['search_unfit'])}" if s["search_unfit"] else "")),
        ("published layout does not fit (planner memory model)", str(len(s["published_unfit"]))),
        ("published layout at risk (within the profile's memory margin; compared at --memory-margin 0)",
         str(len(s["published_at_risk"]))),
        ("those rows at the default margin: geometric mean search / published; no plan within the margin",
         "-" if not s["published_at_risk"] else
         f"{fmt_ratio(s['margin_ratio_geomean'])}; {len(s['margin_no_plan'])}"
         + (f" ({', '.join(s['margin_no_plan'])})" if s["margin_no_plan"] else "")),
        ("searches stopped at --time-limit", str(len(s["incomplete"]))),
        ("search wall time median / max", "-" if med is None else
         f"{med:.2f} s / {mx:.2f} s ({s['search_wall_s_max_id']})"),
        ("skipped rows / other failures (model or estimate)", f"{s['skipped']} / {s['failed']}"),
        ("requirement met", "yes" if s["requirement_met"] else "no"),
    ]


GROUP_HEAD = ["group", "compared/rows", "no worse", "worse", "worst ratio", "geomean ratio", "no plan",
              "published unfit", "median search s"]


def group_row(name, s):
    worst = "-" if s["worst"] is None else f"{fmt_ratio(s['worst']['ratio'])} ({s['worst']['id']})"
    med = s["search_wall_s_median"]
    return [name, f"{s['compared']}/{s['rows']}", str(s["no_worse"]), str(len(s["worse"])), worst,
            fmt_ratio(s["ratio_geomean"]), str(len(s["search_failed"])), str(len(s["published_unfit"])),
            "-" if med is None else f"{med:.2f}"]


def header(doc):
    return [f"runs: {doc['runs_file']} ({doc['rows_in_file']} rows"
            + (f", group {doc['group']}: {len(doc['rows'])}" if doc["group"] else "") + ")",
            f"planner: {doc['planner'] or '(none)'}"
            + (f" ({doc['planner_version']})" if doc["planner_version"] else ""),
            f"search: --threads {sc.THREADS} --time-limit {sc.TIME_LIMIT_S:g} per row, {doc['jobs']} rows at a time"]


def text_report(doc):
    out = header(doc)
    done = [r for r in doc["rows"] if r["outcome"] == "compared"]
    table = [[r["id"], r["published_layout"], fmt_s(r["published_s"]), r["search_layout"], fmt_s(r["search_s"]),
              fmt_ratio(r["ratio"]), VERDICT_TEXT[r["verdict"]], fmt_s(r["search_wall_s"]), fmt_fits(r["search_fits"])]
             for r in done]
    out += [""] + columns(table, ["id", "published layout", "published_s", "searched layout", "search_s", "ratio",
                                  "verdict", "wall_s", "fits"])
    worse = [r for r in done if r["verdict"] in ("worse", "search_unfit")]
    if worse:
        out += ["", f"Search worse or not fitting ({len(worse)}):"]
        for r in worse:
            out += [f"  {r['id']} ({r['group']}): ratio {fmt_ratio(r['ratio'])}",
                    f"    published {r['published_layout']}: {fmt_s(r['published_s'])} s",
                    f"    searched  {r['search_layout']}: {fmt_s(r['search_s'])} s",
                    f"    why: {sc.explain(r)}"]
    for kind, title in (("search_failed", "Search failed"), ("skipped", "Skipped"), ("failed", "Failed")):
        rs = [r for r in doc["rows"] if r["outcome"] == kind]
        if rs:
            out += ["", f"{title} ({len(rs)}):"]
            out += [f"  {r['id']}: {r['reason']}" + (f" (searched: {r['search_layout']}, {fmt_s(r['search_s'])} s)"
                                                     if kind == "failed" and r.get("search_layout") else "")
                    for r in rs]
    s = doc["summary"]
    out += ["", "Summary:"] + [f"  {k}: {v}" for k, v in summary_lines(s["overall"])]
    out += [""] + columns([group_row(g, v) for g, v in s["groups"].items()], GROUP_HEAD)
    if "sweep_summary" in s:
        out += ["", "Published sweeps: " + ", ".join(f"{k} {v}" for k, v in s["sweep_summary"].items())]
    return "\n".join(out) + "\n"


def dry_run_report(doc):
    out = [f"# runs: {doc['runs_file']}; commands run from the repository root; "
           f"MODELS = {doc['models_dir']}"]
    for r in doc["rows"]:
        out.append(f"# {r['id']} ({r['group']}, {r['status']})")
        if r["outcome"] == "skipped":
            out.append(f"#   SKIP: {r['reason']}")
            continue
        out += [shell(r["model_command"]), shell(r["estimate_command"]), shell(r["search_command"])]
        out += [f"#   note: {n}" for n in r["notes"]]
    mapped = sum(1 for r in doc["rows"] if r["outcome"] != "skipped")
    out.append(f"# {mapped} rows mapped, {len(doc['rows']) - mapped} skipped")
    return "\n".join(out) + "\n"


RULES = f"""\
For every row that trained (`status` ok; OOM rows are skipped) and that the harness maps
(the rules of [validation-published.md](validation-published.md)), the script writes the
model with `planner model`, predicts the published layout with `planner estimate` (the
command of validation-published.md) and runs `planner search` on the same model file with
the same cluster, global batch and numerics. Commands run from the repository root:

```
planner model ARCH [shape flags] --batch MICRO_BATCH -o MODELS/NAME.onnx
planner estimate MODELS/NAME.onnx [kept flags] [layout flags] --json
planner search MODELS/NAME.onnx [kept flags] --threads {sc.THREADS} --time-limit {sc.TIME_LIMIT_S:g} --json -o PLANS/ROW.plan.json --force
```

**Kept flags** (passed to both, unchanged): {', '.join(f'`{f}`' for f in sc.KEPT_VALUE_FLAGS + sc.KEPT_BARE_FLAGS)}.
**Layout flags** (estimate only; they are what the search chooses): {', '.join(f'`{f}`' for f in sc.LAYOUT_VALUE_FLAGS + sc.LAYOUT_BARE_FLAGS)}.
One addition: rows of a group whose software overlaps tensor-parallel communication
whenever tp > 1 (NeMo, Megatron-Bridge; see validation-published.md) give the search
`--tp-comm-overlap` even when the published layout has tp = 1 (noted on the row).

**The micro-batch is the published one.** `planner model --batch b` writes a static batch b,
and `planner search` pins the micro-batch to a model's static batch (it cannot rebind it). So
the search explores tensor, pipeline and data-parallel degrees, the schedule (1F1B,
interleaved), context parallelism, ZeRO / distributed optimizer (what the framework
offers) and recompute (none, selective, full) at the published micro-batch, not other
micro-batches (`planner model` cannot write a dynamic-batch model).

**Comparison.** ratio = search `step_time_s` / estimate `step_time_s` of the published
layout. A row is *no worse* when ratio <= 1 + 1e-9, or when the published layout does not
fit under the planner's memory model (`memory.fits` false) and the searched plan fits (any
fitting plan is better than one that does not fit). *Fits* of the searched plan is the plan
file's `prediction.fits` (cross-checked against `peak_memory_bytes` <= `capacity_bytes` of
the search summary); a searched plan that does not fit breaks the requirement whatever its
time. A `planner search` error (no layout fits, or another error) is a *search failure*
and is listed with its message. The worst ratio and its geometric mean are over the rows
whose published layout fits. Search wall time is the `planner search` process's wall time
as the harness measured it (model import included), with up to `--jobs` rows running at
once; the median of an even count is the mean of the middle two.

**Memory margin.** The search keeps every plan below (1 - margin) x capacity, the margin
being the profile's `device.memory_margin_fraction` (0.05 in the bundled GPU profiles: what
the memory prediction misses on measured runs). A published layout whose predicted peak is
within that margin (`memory.status` "at risk") lies outside what the search offers by
default, so for those rows the search is run again with `--memory-margin 0` and that run
is compared (the search's optimality check); what the default margin gives on them (the
price of the margin, or no plan within it) is reported apart and is not a failure.

**Why a row can be worse.** For each row the script lists the options of the published
layout that the search did not enumerate, read from the `space` object of that search's own
`--json` summary (search::space_ranges: the tp, cp, pp, dp, ep, (pp, vp) pairs, schedules,
sequence parallelism and optimizer sharding of the layouts it enumerated), so the list
cannot drift from search::enumerate_layouts.
A worse row with none of these and a complete search points at the search itself.
"""


def markdown_report(doc, command):
    s = doc["summary"]
    out = ["# Validation of `planner search` against published layouts", "",
           "Generated by `tools/validate-published --search`; do not edit by hand. Regenerate with:", "",
           "```", command, "```", "",
           f"Input: `{doc['runs_file']}` ({doc['rows_in_file']} rows"
           + (f"; group `{doc['group']}` only" if doc["group"] else "") + "). Planner: "
           + (doc["planner_version"] or "unknown version") + ".", "",
           "Requirement (issue: search): for every run, searching with the same model, cluster and global "
           "batch gives a predicted iteration time no worse than the predicted time of the published layout, "
           "and never a plan that does not fit.", "",
           "## Summary", ""]
    out += md_table(["", "value"], summary_lines(s["overall"]))
    out += ["", "By source group:", ""]
    out += md_table(GROUP_HEAD, [group_row(f"`{g}`", v) for g, v in s["groups"].items()])
    out += ["", "## How a row becomes commands", "", RULES]
    done = [r for r in doc["rows"] if r["outcome"] == "compared"]
    worse = [r for r in done if r["verdict"] in ("worse", "search_unfit")]
    out += [f"## Rows where the search is worse or its plan does not fit ({len(worse)})", ""]
    out += md_table(["id", "group", "ratio", "published layout", "published s", "searched layout", "searched s",
                     "why"],
                    [[r["id"], r["group"], fmt_ratio(r["ratio"]), r["published_layout"], fmt_s(r["published_s"]),
                      r["search_layout"], fmt_s(r["search_s"]), sc.explain(r)] for r in worse]) if worse else ["None."]
    failed = [r for r in doc["rows"] if r["outcome"] == "search_failed"]
    out += ["", f"## Rows where the search found no plan ({len(failed)})", ""]
    out += md_table(["id", "group", "published layout", "published fits", "planner search message"],
                    [[r["id"], r["group"], r["published_layout"] or "-", fmt_fits(r["published_fits"]), r["reason"]]
                     for r in failed]) if failed else ["None."]
    unfit = [r for r in done if r["published_fits"] is False]
    out += ["", f"## Published layouts that do not fit under the planner's memory model ({len(unfit)})", "",
            "Any fitting searched plan counts as better for these rows.", ""]
    out += md_table(["id", "published layout", "published peak GB", "searched layout", "searched peak GB",
                     "capacity GB", "ratio"],
                    [[r["id"], r["published_layout"], fmt_s(r["published_peak_gb"]), r["search_layout"],
                      fmt_s(r["search_peak_gb"]), fmt_s(r["capacity_gb"]), fmt_ratio(r["ratio"])]
                     for r in unfit]) if unfit else ["None."]
    out += [""] + search_sweeps.markdown(s.get("sweeps", []), fmt_s)
    inc = [r for r in doc["rows"] if r.get("search_complete") is False]
    out += ["", f"## Searches stopped at --time-limit {sc.TIME_LIMIT_S:g} s ({len(inc)})", ""]
    out += md_table(["id", "wall s", "layouts enumerated / scored", "ratio"],
                    [[r["id"], fmt_s(r["search_wall_s"]),
                      f"{(r['search_layouts'] or {}).get('enumerated', '?')} / {(r['search_layouts'] or {}).get('scored', '?')}",
                      fmt_ratio(r["ratio"])] for r in inc]) if inc else ["None."]
    out += ["", "## Every compared row", ""]
    out += md_table(["id", "group", "published layout", "published s", "searched layout", "searched s", "ratio",
                     "verdict", "searched peak / capacity GB", "search wall s"],
                    [[r["id"], r["group"], r["published_layout"], fmt_s(r["published_s"]), r["search_layout"],
                      fmt_s(r["search_s"]), fmt_ratio(r["ratio"]), VERDICT_TEXT[r["verdict"]],
                      f"{fmt_s(r['search_peak_gb'])} / {fmt_s(r['capacity_gb'])} ({fmt_fits(r['search_fits'])})",
                      fmt_s(r["search_wall_s"])] for r in done])
    out += ["", "Layouts: `tpT ppP dpD [cpC] [epE] [vpV] [sp] [tp-any] mbB SCHEDULE [distopt|zeroZ] rc-RECOMPUTE`.", ""]
    rs = [r for r in doc["rows"] if r["outcome"] == "skipped"]
    out += [f"## Skipped rows ({len(rs)})", ""]
    out += md_table(["id", "group", "reason"], [[r["id"], r["group"], r["reason"]] for r in rs]) if rs else ["None."]
    rs = [r for r in doc["rows"] if r["outcome"] == "failed"]
    out += ["", f"## Other failures: model or estimate ({len(rs)})", "",
            "Not compared; the search's result is shown where it ran.", ""]
    out += md_table(["id", "group", "reason", "searched layout", "searched s"],
                    [[r["id"], r["group"], r["reason"], r["search_layout"] or "-", fmt_s(r["search_s"])]
                     for r in rs]) if rs else ["None."]
    out.append("")
    out += ["## JSON output (`--search --json`)", "", "One object on stdout:", ""]
    out += md_table(["field", "meaning"], [[f"`{f.strip()}`" if not f.startswith("  ") else
                                             f"&nbsp;&nbsp;`{f.strip()}`", m] for f, m in JSON_FIELDS])
    return "\n".join(out) + "\n"


JSON_FIELDS = [
    ("mode", "`search`"),
    ("runs_file, rows_in_file, group", "the input file as given, its row count, the --group filter (null: all)"),
    ("planner, planner_version, jobs", "the binary used, its `--version` line, rows run at once"),
    ("time_limit_s, threads", "`--time-limit` and `--threads` of every search"),
    ("dry_run, models_dir", "whether --dry-run was given; the --keep-models folder (plans in its `plans/`), "
     "null when a removed temporary folder was used"),
    ("rows[]", "one object per row (after --group), in file order:"),
    ("  id, group, status, notes[], plan", "as in validation-published.md (`plan`: the published layout, compact)"),
    ("  outcome", "`compared`, `search_failed` (planner search error), `failed` (model or estimate error), "
     "`skipped` (not mapped, or an OOM row); `mapped` in --dry-run"),
    ("  reason", "one line, for the outcomes other than compared"),
    ("  model_command, estimate_command, search_command, plan_file", "argv lists of the planner calls; the "
     "plan the search wrote"),
    ("  published_layout, published_layout_fields", "the estimate's layout, short and as its JSON `layout` "
     "(+ recompute)"),
    ("  published_s, published_fits, published_peak_gb", "estimate `step_time_s`, `memory.fits`, "
     "`memory.peak_bytes` / 1e9"),
    ("  search_layout, search_layout_text", "the searched layout, short (from the plan file) and as "
     "`planner search` describes it"),
    ("  search_s, search_fits, search_peak_gb, capacity_gb", "search `step_time_s`; the plan's `prediction.fits`; "
     "its fullest stage and the device capacity / 1e9"),
    ("  search_time_s, search_wall_s", "the search's own `search_time_s`; the process wall time"),
    ("  search_complete, search_layouts, search_lower_bound_s, search_alternatives",
     "`complete`, `layouts` {enumerated, pruned_memory, pruned_bound, scored, failed}, `lower_bound_s`, "
     "`alternatives` of the search JSON"),
    ("  search_error, estimate_error", "the planner's error line, null when it ran"),
    ("  ratio, verdict", "search_s / published_s; `no_worse`, `worse`, `published_unfit` (counts as no worse), "
     "`search_unfit`"),
    ("  gaps[]", "options of the published layout the search space lacks"),
    ("summary.overall, summary.groups.G", "rows, skipped, failed, compared, no_worse, no_worse_by_time, "
     "worse [ids], worst {id, ratio}, ratio_geomean, search_failed [{id, message}], published_unfit [ids], "
     "search_unfit [ids], published_at_risk [ids], margin_no_plan [ids], margin_ratio_geomean, incomplete [ids], "
     "search_wall_s_median, search_wall_s_max, search_wall_s_max_id, requirement_met"),
    ("  published_at_risk, margin_search_s, margin_search_error", "the published layout's `memory.status` is "
     "\"at risk\"; then the default-margin search's step or error (the compared search ran at --memory-margin 0)"),
    ("  rank_set, measured_s", "the row's sweep (rows differing only in layout) and its measured seconds per step"),
    ("summary.sweeps[]", "per sweep: set, rows, measured_best_id, measured_best_layout, measured_best_s, "
     "measured_best_predicted_s, searched[] {layout, predicted_s, in_sweep, and where in the sweep measured_s, "
     "measured_id, measured_rank, measured_regret_pct}"),
    ("summary.sweep_summary", "sweeps, searched_layouts, in_sweep, worst_measured_regret_pct, "
     "worst_measured_regret_id"),
]
