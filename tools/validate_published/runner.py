"""Turns rows into results: mapping, measured quantity, and (unless dry run)
the planner processes, run in parallel but reported in file order."""

import json
import os
import re
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

from . import stats
from .mapping import Skip, as_pos_float, get, map_row, rank_set
from .measure import measured_iteration


def find_planner(arg, repo_root):
    """The planner binary: --planner, else build/release, build/default, PATH."""
    if arg:
        return arg
    for rel in ("build/release/planner", "build/default/planner"):
        p = os.path.join(repo_root, rel)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return shutil.which("planner")


def new_result(index, row):
    rid = row.get("id") if isinstance(row, dict) else None
    group = row.get("source_group") if isinstance(row, dict) else None
    return {
        "id": rid if isinstance(rid, str) and rid else f"#{index}",
        "group": group if isinstance(group, str) and group else "(none)",
        "status": (row.get("status") if isinstance(row, dict) else None),
        "outcome": None, "reason": None, "notes": [], "plan": None,
        "model_command": None, "estimate_command": None,
        "measured_s": None, "measured_method": None, "predicted_s": None, "error_pct": None,
        "fits": None, "memory_measured_gb": None, "memory_predicted_gb": None, "memory_error_pct": None,
        "num_gpus": None, "rank_set": None,
    }


def prepare(rows, repo_root, planner, models_dir):
    """One result per row with its commands filled in (outcome 'mapped') or
    outcome 'skipped' with a reason. Returns (results, {model path: argv})."""
    results, models = [], {}
    for i, row in enumerate(rows):
        r = new_result(i, row)
        results.append(r)
        try:
            m = map_row(row, repo_root)
        except Skip as e:
            r["outcome"], r["reason"] = "skipped", str(e)
            continue
        except (ArithmeticError, TypeError, ValueError, KeyError, AttributeError) as e:
            # A shape of input the mapper did not foresee: report, never crash.
            r["outcome"], r["reason"] = "skipped", f"row not understood ({type(e).__name__}: {e})"
            continue
        r["notes"], r["plan"] = list(m.notes), m.plan
        r["num_gpus"], r["rank_set"] = m.eff["num_gpus"], rank_set(r["group"], m.eff)
        if r["status"] != "OOM":
            t, how = measured_iteration(row, m.eff)
            if t is None:
                r["outcome"], r["reason"] = "skipped", how
                continue
            r["measured_s"], r["measured_method"] = t, how
        mem = as_pos_float(get(row, "measured", "peak_memory_gb"))
        r["memory_measured_gb"] = mem
        path = os.path.join(models_dir, m.model_stem + ".onnx")
        margv = [planner, "model"] + m.model_args + ["-o", path]
        models.setdefault(path, margv)
        r["model_command"] = margv
        r["estimate_command"] = [planner, "estimate", path] + m.estimate_args
        r["outcome"] = "mapped"
    return results, models


# A binary that cannot be started (being relinked: missing, not executable,
# busy, half written) is retried this long, every RETRY_EVERY_S.
RETRY_S = 300
RETRY_EVERY_S = 2


def run_process(argv, cwd, timeout, retry_s=0):
    """(exit status or None, stdout, stderr); None when it could not run.
    With retry_s, a start failure is retried for that many seconds."""
    deadline = time.monotonic() + retry_s
    while True:
        try:
            p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                               errors="replace", stdin=subprocess.DEVNULL)
            return p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired:
            return None, "", f"timed out after {timeout} s"
        except OSError as e:
            if time.monotonic() >= deadline:
                return None, "", f"could not run {argv[0]}: {e.strerror or e}"
            time.sleep(RETRY_EVERY_S)


def first_line(text, limit=300):
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:limit]
    return "(no message)"


def parse_estimate(stdout):
    """(step_time_s, fits or None, peak_bytes or None) or raises ValueError."""
    try:
        d = json.loads(stdout)
    except ValueError:
        raise ValueError("estimate printed no JSON on stdout")
    if not isinstance(d, dict):
        raise ValueError("estimate JSON is not an object")
    step = as_pos_float(d.get("step_time_s"))
    if step is None:
        raise ValueError("estimate JSON has no positive step_time_s")
    mem = d.get("memory") if isinstance(d.get("memory"), dict) else {}
    fits = mem.get("fits") if isinstance(mem.get("fits"), bool) else None
    peak = as_pos_float(mem.get("peak_bytes"))
    capacity = as_pos_float(mem.get("capacity_bytes"))
    if peak is not None and capacity is not None:
        # The reserved peak cannot exceed the device: the allocator frees its
        # cache and retries before it would, so nvidia-smi shows at most that.
        peak = min(peak, capacity)
    return step, fits, peak


def rows_with_models(results, model_err):
    """The mapped rows whose model was built; rows whose model failed are
    marked failed with the reason."""
    todo = []
    for r in results:
        if r["outcome"] != "mapped":
            continue
        err = model_err.get(r["model_command"][-1])
        if err:
            r["outcome"], r["reason"] = "failed", err
        else:
            todo.append(r)
    return todo


def make_models(pool, models, repo_root, timeout, reuse_models):
    """Runs the `planner model` commands on the pool; {model path: error line}
    for those that failed."""
    def make(item):
        path, argv = item
        if os.path.isfile(path):
            if reuse_models:
                return path, None
            os.remove(path)  # --keep-models with --force: `planner model` refuses to overwrite
        rc, _out, err = run_process(argv, repo_root, timeout, RETRY_S)
        if rc == 0:
            return path, None
        return path, f"planner model {'failed' if rc is None else f'exited {rc}'}: {first_line(err)}"

    return {path: err for path, err in pool.map(make, sorted(models.items())) if err}


def execute(results, models, repo_root, jobs, timeout, reuse_models):
    """Runs the model then estimate commands; fills the results in place."""

    def estimate(r):
        rc, out, err = run_process(r["estimate_command"], repo_root, timeout, RETRY_S)
        return r, rc, out, err

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        todo = rows_with_models(results, make_models(pool, models, repo_root, timeout, reuse_models))
        for r, rc, out, err in pool.map(estimate, todo):
            if rc != 0:
                r["outcome"] = "failed"
                r["reason"] = f"planner estimate {'failed' if rc is None else f'exited {rc}'}: {first_line(err)}"
                continue
            try:
                step, fits, peak = parse_estimate(out)
            except ValueError as e:
                r["outcome"], r["reason"] = "failed", str(e)
                continue
            r["predicted_s"], r["fits"] = step, fits
            if peak is not None:
                r["memory_predicted_gb"] = peak / 1e9
                if r["memory_measured_gb"]:
                    r["memory_error_pct"] = stats.error_pct(r["memory_predicted_gb"], r["memory_measured_gb"])
            if r["status"] == "OOM":
                r["outcome"] = "oom_checked"
            else:
                r["outcome"] = "compared"
                r["error_pct"] = stats.error_pct(step, r["measured_s"])
            if fits is None:
                r["notes"].append("estimate JSON has no memory.fits")
    return results


def planner_version(planner, repo_root):
    rc, out, _err = run_process([planner, "--version"], repo_root, 30)
    return first_line(out) if rc == 0 else None


def has_subcommand(planner, repo_root, name):
    """True when `planner NAME --help` shows the subcommand's usage (a binary
    without it prints the top-level help, also exit 0)."""
    rc, out, _err = run_process([planner, name, "--help"], repo_root, 30)
    return rc == 0 and re.search(r"Usage:.*\b" + re.escape(name) + r"\b", out or "") is not None


def has_estimate(planner, repo_root):
    return has_subcommand(planner, repo_root, "estimate")



def step_times(argvs, repo_root, jobs, timeout):
    """`planner estimate` argv lists run JOBS at a time (one process each);
    their step_time_s in order, None for a call that failed."""
    def one(argv):
        rc, out, _err = run_process(argv, repo_root, timeout, RETRY_S)
        if rc != 0:
            return None
        try:
            return parse_estimate(out)[0]
        except ValueError:
            return None

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, argvs))
