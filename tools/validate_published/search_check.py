"""`--search` mode: does `planner search` find, for every published run, a
layout predicted no slower than the published one, and one that fits?

For every ok row the harness can map, the same model file, cluster flags,
global batch, precision, attention and framework flags as the row's
`planner estimate` command go to `planner search`; the layout flags (what the
search chooses) are dropped. The search's predicted step is compared with the
estimate of the published layout. Rows run in parallel (--jobs); each search
gets --threads 1 and --time-limit 60.
"""

import json
import math
import os
import re
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from . import runner, search_sweeps
from .mapping import Skip, as_pos_float, map_row, profile_node_size, rank_set
from .measure import measured_iteration

TIME_LIMIT_S = 60
THREADS = 1
# Slack on "no worse": search <= published x (1 + RATIO_EPS).
RATIO_EPS = 1e-9

# Estimate flags that describe the layout (what the search chooses), with
# and without a value. --json is re-added at the end.
LAYOUT_VALUE_FLAGS = ("--tp", "--pp", "--dp", "--cp", "--ep", "--vp", "--schedule", "--micro-batch", "--zero",
                      "--recompute")
LAYOUT_BARE_FLAGS = ("--sp", "--distributed-optimizer", "--split-embedding-loss")
# Estimate flags passed on unchanged: model, cluster, batch, numerics, framework.
KEPT_VALUE_FLAGS = ("--profile", "--devices", "--global-batch", "--precision", "--attention", "--gpus-per-node",
                    "--framework", "--grad-reduce-bytes", "--memory-format", "--optimizer-state-dtype",
                    "--master-weights", "--recompute-modules")
KEPT_BARE_FLAGS = ("--tp-comm-overlap", "--fused-loss")



def search_args(estimate_args, stack=None):
    """(`planner search` arguments after the model, without -o, notes).

    The estimate's arguments minus the layout flags (LAYOUT_*), in their
    order, then --threads, --time-limit and --json. A flag the table does not
    know raises ValueError, so a new estimate flag is classified, not passed
    on silently."""
    from . import tables
    out, notes, i = [], [], 0
    a = list(estimate_args)
    while i < len(a):
        f = a[i]
        if f in LAYOUT_VALUE_FLAGS:
            i += 2
        elif f in LAYOUT_BARE_FLAGS or f == "--json":
            i += 1
        elif f in KEPT_VALUE_FLAGS:
            out += a[i:i + 2]
            i += 2
        elif f in KEPT_BARE_FLAGS:
            out.append(f)
            i += 1
        else:
            raise ValueError(f"estimate flag {f} is neither a layout flag nor a kept one")
    overlap = tables.TP_COMM_OVERLAP_STACKS.get(stack)
    if overlap and "--tp-comm-overlap" not in out:
        out.append("--tp-comm-overlap")
        notes.append("search gets --tp-comm-overlap (the published layout has no tp > 1 with sp, but the "
                     "software overlaps whenever it has: " + overlap + ")")
    out += ["--threads", str(THREADS), "--time-limit", f"{TIME_LIMIT_S:g}", "--json"]
    return out, notes


def flag_value(args, name):
    if name in args:
        i = args.index(name)
        if i + 1 < len(args):
            return args[i + 1]
    return None


def plan_name(index, rid):
    return f"{index:03d}-" + re.sub(r"[^A-Za-z0-9._-]", "_", rid)[:80] + ".plan.json"


def new_result(index, row):
    r = runner.new_result(index, row)
    for k in ("measured_s", "measured_method", "predicted_s", "error_pct", "fits", "memory_measured_gb",
              "memory_predicted_gb", "memory_error_pct"):
        del r[k]
    r.update({
        "search_command": None, "plan_file": None, "framework": None, "layers": None, "node_size": None,
        "published_layout": None, "published_layout_fields": None, "published_s": None, "published_fits": None,
        "published_peak_gb": None, "estimate_error": None,
        "search_layout": None, "search_layout_text": None, "search_s": None, "search_fits": None,
        "search_peak_gb": None, "capacity_gb": None, "search_time_s": None, "search_wall_s": None,
        "search_complete": None, "search_layouts": None, "search_lower_bound_s": None,
        "search_alternatives": None, "search_error": None,
        "ratio": None, "verdict": None, "gaps": [],
        "published_at_risk": None, "margin_search_s": None, "margin_search_error": None,
        "measured_s": None,
    })
    return r


def prepare(rows, repo_root, planner, models_dir, plans_dir):
    """One result per row (outcome 'mapped' or 'skipped'); OOM rows are
    skipped. Returns (results, {model path: argv})."""
    results, models = [], {}
    for i, row in enumerate(rows):
        r = new_result(i, row)
        results.append(r)
        if r["status"] == "OOM":
            r["outcome"], r["reason"] = "skipped", "OOM row (--search checks rows that trained)"
            continue
        try:
            m = map_row(row, repo_root)
            sargs, snotes = search_args(m.estimate_args, m.eff["stack"])
        except Skip as e:
            r["outcome"], r["reason"] = "skipped", str(e)
            continue
        except (ArithmeticError, TypeError, ValueError, KeyError, AttributeError) as e:
            r["outcome"], r["reason"] = "skipped", f"row not understood ({type(e).__name__}: {e})"
            continue
        r["notes"], r["plan"] = list(m.notes) + snotes, m.plan
        # The sweep this row belongs to and its measured seconds per step
        # (search_sweeps.py: the search's pick judged by the source's runs).
        r["rank_set"] = rank_set(r["group"], m.eff)
        r["measured_s"] = measured_iteration(row, m.eff)[0]
        path = os.path.join(models_dir, m.model_stem + ".onnx")
        margv = [planner, "model"] + m.model_args + ["-o", path]
        models.setdefault(path, margv)
        r["model_command"] = margv
        r["estimate_command"] = [planner, "estimate", path] + m.estimate_args
        r["plan_file"] = os.path.join(plans_dir, plan_name(i, r["id"]))
        r["search_command"] = [planner, "search", path] + sargs + ["-o", r["plan_file"], "--force"]
        r["framework"] = flag_value(m.estimate_args, "--framework") or "megatron"
        r["layers"] = m.eff.get("layers")
        gpn = flag_value(m.estimate_args, "--gpus-per-node")
        prof = flag_value(m.estimate_args, "--profile")
        r["node_size"] = int(gpn) if gpn else (profile_node_size(os.path.join(repo_root, prof)) if prof else None)
        r["outcome"] = "mapped"
    return results, models


# ---------------------------------------------------------------------------
# Parsing planner output.

def short_layout(lay, recompute):
    """`tp8 pp2 dp32 vp2 sp mb4 interleaved distopt rc-full` from an estimate
    JSON layout or a plan file's layout (+ training.micro_batch)."""
    g = lambda k, d=None: lay.get(k, d)
    out = [f"tp{g('tp', 1)} pp{g('pp', 1)} dp{g('dp', 1)}"]
    out += [f"{k}{g(k)}" for k in ("cp", "ep", "vp") if (g(k) or 1) > 1]
    if g("sequence_parallel"):
        out.append("sp")
    if g("tp_splits_batch"):
        out.append("tp-any")
    if g("micro_batch") is not None:
        out.append(f"mb{g('micro_batch')}")
    out.append(str(g("schedule", "?")))
    if g("distributed_optimizer"):
        out.append("distopt")
    elif g("zero"):
        out.append(f"zero{g('zero')}")
    out.append(f"rc-{recompute}")
    return " ".join(out)


def parse_estimate(stdout):
    """(step, fits or None, peak bytes or None, layout fields, short layout,
    memory status or None); raises ValueError."""
    step, fits, peak = runner.parse_estimate(stdout)
    d = json.loads(stdout)
    mem = d.get("memory") if isinstance(d.get("memory"), dict) else {}
    status = mem.get("status") if isinstance(mem.get("status"), str) else None
    lay = dict(d.get("layout") or {}) if isinstance(d.get("layout"), dict) else {}
    rc = (d.get("training") or {}).get("recompute", "?") if isinstance(d.get("training"), dict) else "?"
    lay["recompute"] = rc
    return step, fits, peak, lay, short_layout(lay, rc), status


def parse_search(stdout):
    """The planner.search/v1 summary as a dict; raises ValueError."""
    try:
        d = json.loads(stdout)
    except ValueError:
        raise ValueError("search printed no JSON on stdout")
    if not isinstance(d, dict) or d.get("format") != "planner.search/v1":
        raise ValueError("search JSON is not planner.search/v1")
    if as_pos_float(d.get("step_time_s")) is None:
        raise ValueError("search JSON has no positive step_time_s")
    return d


def read_plan(path):
    """(short layout or None, fits or None, peak bytes or None, note or None)
    from the plan file the search wrote."""
    try:
        with open(path, encoding="utf-8") as f:
            p = json.load(f)
        lay = dict(p["layout"])
        lay["micro_batch"] = p["training"]["micro_batch"]
        pred = p["prediction"]
        fits = pred.get("fits")
        stages = pred.get("stages") or []
        peaks = [as_pos_float(s.get("peak_bytes")) for s in stages]
        peak = max((x for x in peaks if x is not None), default=None)
        note = None
        if isinstance(fits, bool) and stages and fits != all(s.get("fits") is True for s in stages):
            note = "plan's prediction.fits disagrees with its stages[].fits"
        return short_layout(lay, p["training"]["recompute"]), fits if isinstance(fits, bool) else None, peak, note
    except (OSError, ValueError, KeyError, TypeError) as e:
        return None, None, None, f"plan file not readable: {type(e).__name__}: {e}"


# ---------------------------------------------------------------------------
# Verdicts and explanations.

def verdict(r):
    """no_worse | published_unfit (search fits, published does not: better)
    | worse | search_unfit (the search's plan does not fit), or None when
    not both ran."""
    if r["search_s"] is None or r["published_s"] is None:
        return None
    if r["search_fits"] is False:
        return "search_unfit"
    if r["published_fits"] is False:
        return "published_unfit"
    return "no_worse" if r["search_s"] <= r["published_s"] * (1 + RATIO_EPS) else "worse"


def _listed(values):
    return ", ".join(str(v) for v in values) if values else "none"


def space_gaps(lay, space):
    """Options the published layout uses that the search did not enumerate
    (one line each), read from the `space` object of the search's own JSON
    summary (search::space_ranges over the layouts it enumerated); [] when
    the search reported none."""
    if not isinstance(space, dict):
        return []
    gaps = []
    g = lambda k, d=1: lay.get(k) if lay.get(k) is not None else d
    tp, pp, dp, cp, ep, vp = (g(k) for k in ("tp", "pp", "dp", "cp", "ep", "vp"))
    for name, value in (("tp", tp), ("cp", cp), ("pp", pp), ("dp", dp), ("ep", ep)):
        have = space.get(name) or []
        if value not in have:
            gaps.append(f"{name}={value} (the search enumerated {name} in {_listed(have)})")
    schedule = g("schedule", "1f1b")
    if schedule not in (space.get("schedules") or []):
        gaps.append(f"{schedule} schedule (the search enumerated {_listed(space.get('schedules'))})")
    pairs = [tuple(x) for x in space.get("pp_vp") or []]
    if vp > 1 and (pp, vp) not in pairs:
        gaps.append(f"vp={vp} with pp={pp} (the search enumerated vp in "
                    f"{_listed(sorted(v for p, v in pairs if p == pp and v > 1))} for pp={pp})")
    sp = bool(g("sequence_parallel", False))
    if tp > 1 and sp not in (space.get("sequence_parallel_with_tp") or []):
        gaps.append(f"{'' if sp else 'no '}sequence parallelism with tp > 1 (the search enumerated sp "
                    f"{_listed(space.get('sequence_parallel_with_tp'))})")
    mine = {"zero": g("zero", 0), "distributed_optimizer": bool(g("distributed_optimizer", False))}
    offered = space.get("state_sharding") or []
    if offered and mine not in offered:
        name = lambda z, d: "distributed optimizer" if d else f"ZeRO-{z}"
        have = ", ".join(name(o.get("zero"), o.get("distributed_optimizer")) for o in offered)
        gaps.append(f"{name(mine['zero'], mine['distributed_optimizer'])} (the search enumerated {have})")
    return gaps


def explain(r):
    """Why a worse row may be worse: the gaps, else the time limit, else a
    possible search bug."""
    if r["gaps"]:
        return "published layout outside the search space: " + "; ".join(r["gaps"])
    if r["search_complete"] is False:
        return f"search stopped at --time-limit {TIME_LIMIT_S:g} s"
    return "published layout is inside the search space and the search was complete: search bug?"


# ---------------------------------------------------------------------------
# Running.

def execute(results, models, repo_root, jobs, timeout, reuse_models):
    """Runs models, then the estimates and searches of all rows in parallel."""

    def task(item):
        kind, r = item
        t0 = time.monotonic()
        rc, out, err = runner.run_process(r[f"{kind}_command"], repo_root, timeout, runner.RETRY_S)
        return kind, r, rc, out, err, time.monotonic() - t0

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        todo = runner.rows_with_models(
            results, runner.make_models(pool, models, repo_root, timeout, reuse_models))
        for d in sorted({os.path.dirname(r["plan_file"]) for r in todo}):
            os.makedirs(d, exist_ok=True)
        # Searches first: they take longest.
        items = [("search", r) for r in todo] + [("estimate", r) for r in todo]
        for kind, r, rc, out, err, wall in pool.map(task, items):
            if kind == "estimate":
                fill_estimate(r, rc, out, err)
            else:
                fill_search(r, rc, out, err, wall)
        # A published layout within the profile's memory margin of capacity
        # ("at risk") is outside what the search offers by default: the
        # search is compared at --memory-margin 0 there, and what the
        # default margin gives is kept apart (margin_search_s / _error).
        risky = [r for r in todo if r.get("published_at_risk")]
        for r in risky:
            r["margin_search_s"], r["margin_search_error"] = r["search_s"], r["search_error"]
            for k in ("search_s", "search_error", "search_fits", "search_layout", "search_layout_text"):
                r[k] = None
            r["search_command"] = r["search_command"] + ["--memory-margin", "0"]
        for kind, r, rc, out, err, wall in pool.map(task, [("search", r) for r in risky]):
            fill_search(r, rc, out, err, wall)
    for r in results:
        if r["outcome"] == "mapped":
            finish(r)
    return results


def fail_text(cmd, rc, err):
    return f"planner {cmd} {'failed' if rc is None else f'exited {rc}'}: {runner.first_line(err)}"


def fill_estimate(r, rc, out, err):
    if rc != 0:
        r["estimate_error"] = fail_text("estimate", rc, err)
        return
    try:
        step, fits, peak, lay, short, status = parse_estimate(out)
    except ValueError as e:
        r["estimate_error"] = str(e)
        return
    r["published_s"], r["published_fits"] = step, fits
    r["published_at_risk"] = status == "at risk"
    r["published_peak_gb"] = None if peak is None else peak / 1e9
    r["published_layout_fields"], r["published_layout"] = lay, short


def fill_search(r, rc, out, err, wall):
    r["search_wall_s"] = wall
    if rc != 0:
        msg = runner.first_line(err, 1000)
        prefix = "planner search: error: "
        r["search_error"] = msg[len(prefix):] if msg.startswith(prefix) else fail_text("search", rc, err)
        return
    try:
        d = parse_search(out)
    except ValueError as e:
        r["search_error"] = str(e)
        return
    r["search_s"] = float(d["step_time_s"])
    r["search_layout_text"] = d.get("layout")
    r["search_time_s"] = d.get("search_time_s")
    r["search_complete"] = d.get("complete")
    r["search_layouts"] = d.get("layouts")
    r["search_lower_bound_s"] = d.get("lower_bound_s")
    r["search_alternatives"] = d.get("alternatives")
    r["search_space"] = d.get("space")
    peak, cap = as_pos_float(d.get("peak_memory_bytes")), as_pos_float(d.get("capacity_bytes"))
    # What must fit is the allocated peak (the reserved one may press against
    # capacity: the allocator frees its cache and retries).
    allocated = as_pos_float(d.get("allocated_memory_bytes"))
    r["capacity_gb"] = None if cap is None else cap / 1e9
    short, plan_fits, plan_peak, note = read_plan(r["plan_file"])
    r["search_layout"] = short or d.get("layout")
    peak = plan_peak if plan_peak is not None else peak
    r["search_peak_gb"] = None if peak is None else peak / 1e9
    must_fit = allocated if allocated is not None else peak
    json_fits = None if must_fit is None or cap is None else must_fit <= cap
    if note:
        r["notes"].append(note)
    if plan_fits is not None and json_fits is not None and plan_fits != json_fits:
        r["notes"].append(f"search plan's prediction.fits is {plan_fits} but allocated peak {must_fit / 1e9:.4g} GB "
                          f"vs capacity {cap / 1e9:.4g} GB")
    r["search_fits"] = plan_fits if plan_fits is not None else json_fits


def finish(r):
    if r.get("published_layout_fields"):
        r["gaps"] = space_gaps(r["published_layout_fields"], r.get("search_space"))
    if r["search_error"]:
        r["outcome"] = "search_failed"
        r["reason"] = r["search_error"] + (f" (and {r['estimate_error']})" if r["estimate_error"] else "")
    elif r["estimate_error"]:
        r["outcome"], r["reason"] = "failed", r["estimate_error"]
    else:
        r["outcome"] = "compared"
        r["ratio"] = r["search_s"] / r["published_s"]
        r["verdict"] = verdict(r)


# ---------------------------------------------------------------------------
# Summary.

def _geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def summarize(results):
    compared = [r for r in results if r["outcome"] == "compared"]
    by = lambda v: [r for r in compared if r["verdict"] == v]
    decided = [r for r in compared if r["verdict"] in ("no_worse", "worse")]
    worst = max(decided, key=lambda r: r["ratio"], default=None)
    ratios = [r["ratio"] for r in decided]
    walls = [r["search_wall_s"] for r in results if r.get("search_wall_s") is not None]
    slowest = max((r for r in results if r.get("search_wall_s") is not None), key=lambda r: r["search_wall_s"],
                  default=None)
    failed = [r for r in results if r["outcome"] == "search_failed"]
    worse, unfit = by("worse"), by("search_unfit")
    return {
        "rows": len(results),
        "skipped": sum(1 for r in results if r["outcome"] == "skipped"),
        "failed": sum(1 for r in results if r["outcome"] == "failed"),
        "compared": len(compared),
        "no_worse": len(by("no_worse")) + len(by("published_unfit")),
        "no_worse_by_time": len(by("no_worse")),
        "worse": [r["id"] for r in worse],
        "worst": None if worst is None else {"id": worst["id"], "ratio": worst["ratio"]},
        "ratio_geomean": math.exp(sum(math.log(x) for x in ratios) / len(ratios)) if ratios else None,
        "search_failed": [{"id": r["id"], "message": r["search_error"]} for r in failed],
        "published_unfit": [r["id"] for r in compared if r["published_fits"] is False],
        "published_at_risk": [r["id"] for r in compared if r.get("published_at_risk")],
        "margin_no_plan": [r["id"] for r in compared if r.get("published_at_risk") and r.get("margin_search_s") is None],
        "margin_ratio_geomean": _geomean([r["margin_search_s"] / r["published_s"] for r in compared
                                          if r.get("published_at_risk") and r.get("margin_search_s")]),
        "search_unfit": [r["id"] for r in unfit],
        "incomplete": [r["id"] for r in results if r.get("search_complete") is False],
        "search_wall_s_median": statistics.median(walls) if walls else None,
        "search_wall_s_max": None if slowest is None else slowest["search_wall_s"],
        "search_wall_s_max_id": None if slowest is None else slowest["id"],
        "requirement_met": bool(compared) and not worse and not unfit and not failed,
    }


def summaries(results):
    groups = {}
    for r in results:
        groups.setdefault(r["group"], []).append(r)
    sw = search_sweeps.sweeps(results)
    return {"overall": summarize(results), "groups": {g: summarize(rs) for g, rs in groups.items()},
            "sweeps": sw, "sweep_summary": search_sweeps.summary(sw)}
