"""The run-derived profile numbers (tools/fits.json) and the procedure that fits them.

A *fit* names the profile numbers (*params*) it sets, the validation rows it
was fitted on (source groups, profiles, optional filters) and a search over a
grid that minimises the mean |error| of those rows. The estimator is injected:
`estimate(rows, profiles)` returns {row id: predicted seconds or None}, where
`profiles` maps a profile stem (file name without .json) to the profile dict
to estimate with. So the search can be tested with a stand-in estimator and
no planner.

Param kinds (`kind`):
  value       KEY is a dotted path to an object with a `value` (profile-format.md)
  cell        KEY is a dotted path to a bare number (e.g. a table row's efficiency)
  gemm-scale  the device GEMM table = `base` profile's table x the value,
              each efficiency rounded to 5 decimals

Grids: `values` (an explicit list) or `range` {lo, hi, steps}: the points
lo, lo + steps[0], ... <= hi, then around the best so far, for each further
step s, the points of the lattice lo + k s within the previous step of it.
Searches: `joint` (every combination of `values` lists) or `coordinate` (each
param on its own grid in file order, the others held, `passes` times; a
param's `where` narrows the rows its own search scores).

Every fit starts from the profiles as given (the committed numbers for the
other params); the search is deterministic (ties keep the first point met).
Standard library only.
"""

import copy
import itertools
import json
import math
import os

GEMM_ROUND = 5


class FitError(Exception):
    pass


# ---------------------------------------------------------------------------
# Reading tools/fits.json.

PARAM_KINDS = ("value", "cell", "gemm-scale")


def load(path):
    """The list of fit dicts of a fits file (validated), or raises FitError."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise FitError(f"{path}: cannot read: {e}")
    fits = data.get("fits") if isinstance(data, dict) else None
    if not isinstance(fits, list):
        raise FitError(f"{path}: no \"fits\" array")
    names = set()
    for i, f in enumerate(fits):
        where = f"{path}: fits[{i}]"
        for k in ("name", "profiles", "groups", "params"):
            if k not in f:
                raise FitError(f"{where}: no '{k}'")
        if f["name"] in names:
            raise FitError(f"{where}: name '{f['name']}' used twice")
        names.add(f["name"])
        if f.get("search", "joint") not in ("joint", "coordinate"):
            raise FitError(f"{where}: search must be joint or coordinate")
        for p in f["params"]:
            if p.get("kind") not in PARAM_KINDS:
                raise FitError(f"{where}: param kind must be one of {', '.join(PARAM_KINDS)}")
            for k in ("value", "fallback"):
                if not isinstance(p.get(k), (int, float)):
                    raise FitError(f"{where}: param {p.get('key')} has no numeric '{k}'")
            if p["kind"] == "gemm-scale" and "base" not in p:
                raise FitError(f"{where}: gemm-scale param needs a 'base' profile")
            if p["kind"] != "gemm-scale" and "key" not in p:
                raise FitError(f"{where}: param needs a 'key'")
            if ("values" in p) == ("range" in p):
                raise FitError(f"{where}: param {param_label(p)} needs exactly one of 'values', 'range'")
            if f.get("search", "joint") == "joint" and "range" in p:
                raise FitError(f"{where}: a joint search takes 'values' lists")
    return fits


def param_label(p):
    return "gemm-scale" if p["kind"] == "gemm-scale" else p["key"]


def targets(fit, p):
    """The profiles a param's fitted value is written to (default: the fit's)."""
    return p.get("targets", fit["profiles"])


# ---------------------------------------------------------------------------
# Editing profiles.

def _walk(obj, keys):
    for k in keys:
        obj = obj[int(k)] if isinstance(obj, list) else obj[k]
    return obj


def _put(obj, key, value):
    return obj.__setitem__(int(key) if isinstance(obj, list) else key, value)


def apply_param(profile, p, value, base_profiles):
    """Writes VALUE for param P into PROFILE (a dict, edited in place)."""
    if p["kind"] == "gemm-scale":
        base = base_profiles[p["base"]]["device"]["gemm_efficiency"]["rows"]
        profile["device"]["gemm_efficiency"]["rows"] = [[x, round(e * value, GEMM_ROUND)] for x, e in base]
        return
    keys = p["key"].split(".")
    parent = _walk(profile, keys[:-1])
    if p["kind"] == "value":
        target = parent[int(keys[-1])] if isinstance(parent, list) else parent[keys[-1]]
        if not isinstance(target, dict) or "value" not in target:
            raise FitError(f"{p['key']} is not an object with a 'value'")
        target["value"] = value
    else:
        _put(parent, keys[-1], value)


def read_param(profile, p, base_profiles):
    """The number a profile holds for param P (a gemm-scale reads as the
    list of rows it holds, to compare with apply_param's)."""
    if p["kind"] == "gemm-scale":
        return profile["device"]["gemm_efficiency"]["rows"]
    v = _walk(profile, p["key"].split("."))
    return v["value"] if p["kind"] == "value" else v


def static_check(fits, profiles):
    """Mismatches between fits.json's committed values and the profiles: a
    list of lines (empty when every profile holds what fits.json says)."""
    bad = []
    for f in fits:
        for p in f["params"]:
            for stem in targets(f, p):
                have = read_param(profiles[stem], p, profiles)
                want = copy.deepcopy(profiles[stem])
                apply_param(want, p, p["value"], profiles)
                if have != read_param(want, p, profiles):
                    bad.append(f"{f['name']}: {stem} {param_label(p)}: the profile does not hold "
                               f"the committed value {p['value']:g}")
    return bad


# ---------------------------------------------------------------------------
# Rows.

def _arg(argv, flag):
    return argv[argv.index(flag) + 1] if argv and flag in argv[:-1] else None


def row_profile(r):
    path = _arg(r.get("estimate_command"), "--profile")
    return os.path.splitext(os.path.basename(path))[0] if path else None


def row_seq(r):
    s = _arg(r.get("model_command"), "--seq")
    return int(s) if s is not None else None


def row_arch(r):
    """The `planner model` architecture of a row ("gpt", "llama-moe", ...)."""
    command = r.get("model_command") or []
    i = command.index("model") if "model" in command else -1
    return command[i + 1] if 0 <= i < len(command) - 1 else None


def row_matches(r, where):
    """WHERE: {"args": {FLAG: VALUE}, "seq_min": S, "seq_max": S,
    "exclude_archs": [ARCH, ...]} (all optional; seq bounds inclusive)."""
    if not where:
        return True
    if row_arch(r) in where.get("exclude_archs", []):
        return False
    for flag, val in where.get("args", {}).items():
        if _arg(r.get("estimate_command"), flag) != val:
            return False
    seq = row_seq(r)
    if "seq_min" in where and (seq is None or seq < where["seq_min"]):
        return False
    if "seq_max" in where and (seq is None or seq > where["seq_max"]):
        return False
    return True


def training_rows(fit, results, groups=None):
    """The compared rows FIT is fitted on; GROUPS (default: the fit's) limits
    the source groups."""
    groups = fit["groups"] if groups is None else groups
    return [r for r in results if r.get("outcome") == "compared" and r.get("group") in groups
            and row_profile(r) in fit["profiles"] and row_matches(r, fit.get("where"))]


# ---------------------------------------------------------------------------
# The search.

def _lattice(lo, hi, step, centre=None, radius=None):
    n = int(math.floor((hi - lo) / step + 1e-9))
    pts = [round(lo + k * step, 6) for k in range(n + 1)]
    if centre is not None:
        pts = [x for x in pts if abs(x - centre) <= radius + 1e-9]
    return pts


def mean_abs_error(rows, pred):
    """Mean |error| % over ROWS, or None when any row has no prediction."""
    errs = []
    for r in rows:
        p = pred.get(r["id"])
        if p is None:
            return None
        errs.append(abs(p - r["measured_s"]) / r["measured_s"] * 100.0)
    return sum(errs) / len(errs) if errs else None


def _better(a, b):
    return a is not None and (b is None or a < b)


def run_fit(fit, rows, profiles, estimate, log=None):
    """Fits FIT's params on ROWS (the training rows). PROFILES: {stem: dict},
    the starting point (not edited). Returns ({param label: value}, best mean
    |error|). LOG(line) is called for every point scored."""
    base = profiles
    params = fit["params"]
    current = {param_label(p): p["value"] for p in params}

    def score(point, rows_scored):
        profs = {s: copy.deepcopy(base[s]) for s in fit["profiles"]}
        for p in params:
            for s in fit["profiles"]:
                apply_param(profs[s], p, point[param_label(p)], base)
        m = mean_abs_error(rows_scored, estimate(rows_scored, {**base, **profs}))
        if log:
            label = " ".join(f"{k}={v:g}" for k, v in point.items())
            log(f"{fit['name']}: {label}: mean |error| "
                + ("(a row failed)" if m is None else f"{m:.3f} %") + f" over {len(rows_scored)} rows")
        return m

    if not rows:
        raise FitError(f"{fit['name']}: no training rows")
    if fit.get("search", "joint") == "joint":
        labels = [param_label(p) for p in params]
        best, best_m = None, None
        for combo in itertools.product(*[p["values"] for p in params]):
            point = dict(zip(labels, combo))
            m = score(point, rows)
            if _better(m, best_m):
                best, best_m = point, m
        if best is None:
            raise FitError(f"{fit['name']}: no grid point scored every row")
        return best, best_m
    for _ in range(fit.get("passes", 1)):
        for p in params:
            lab = param_label(p)
            rows_p = [r for r in rows if row_matches(r, p.get("where"))]
            if not rows_p:
                continue  # no row depends on it: keep its value
            seen = {}

            def try_points(pts):
                for x in pts:
                    if x not in seen:
                        seen[x] = score({**current, lab: x}, rows_p)

            if "values" in p:
                try_points(p["values"])
            else:
                g = p["range"]
                steps = g["steps"]
                try_points(_lattice(g["lo"], g["hi"], steps[0]))
                for prev, step in zip(steps, steps[1:]):
                    b = _argbest(seen)
                    try_points(_lattice(g["lo"], g["hi"], step, b, prev))
            b = _argbest(seen)
            if b is None:
                raise FitError(f"{fit['name']}: {lab}: no grid point scored every row")
            current[lab] = b
    final = score(current, rows)
    return dict(current), final


def _argbest(seen):
    best, best_m = None, None
    for x in sorted(seen):
        if _better(seen[x], best_m):
            best, best_m = x, seen[x]
    return best


def resolution(p):
    """The grid's finest spacing around a param (0 for an explicit list of one)."""
    if "range" in p:
        return p["range"]["steps"][-1]
    v = sorted(p["values"])
    return max((b - a for a, b in zip(v, v[1:])), default=0.0)


def write_values(fit, values, profiles):
    """A copy of PROFILES with FIT's fitted VALUES written to each param's targets."""
    out = dict(profiles)
    for p in fit["params"]:
        for stem in targets(fit, p):
            if out[stem] is profiles[stem]:
                out[stem] = copy.deepcopy(profiles[stem])
            apply_param(out[stem], p, values[param_label(p)], profiles)
    return out


def fallback_values(fit):
    return {param_label(p): p["fallback"] for p in fit["params"]}


# ---------------------------------------------------------------------------
# The estimator: planner processes, with a cache per (row, profile contents).

def profile_key(profile):
    return json.dumps(profile, sort_keys=True, separators=(",", ":"))


class Estimator:
    """estimate(rows, profiles): a row whose profile equals the committed
    one keeps its in-sample prediction; others run `planner estimate` with the
    profile written to a temporary folder (one folder per distinct profile,
    the file keeping its name). RUN(argv_list) -> list of predicted seconds
    or None (injected: runner threads in the tool, a function in tests)."""

    def __init__(self, committed, tmpdir, run):
        self.committed = {s: profile_key(p) for s, p in committed.items()}
        self.tmpdir, self.run = tmpdir, run
        self.paths, self.cache = {}, {}
        self.planner_runs = 0

    def _path(self, stem, key, profile):
        if key not in self.paths:
            d = os.path.join(self.tmpdir, f"p{len(self.paths)}")
            os.makedirs(d)
            path = os.path.join(d, stem + ".json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(profile, f, indent=1)
            self.paths[key] = path
        return self.paths[key]

    def __call__(self, rows, profiles):
        out, todo = {}, []
        for r in rows:
            stem = row_profile(r)
            if stem not in profiles:
                out[r["id"]] = r.get("predicted_s")
                continue
            key = profile_key(profiles[stem])
            if key == self.committed.get(stem):
                out[r["id"]] = r.get("predicted_s")
            elif (r["id"], key) in self.cache:
                out[r["id"]] = self.cache[(r["id"], key)]
            else:
                argv = list(r["estimate_command"])
                argv[argv.index("--profile") + 1] = self._path(stem, key, profiles[stem])
                todo.append((r, key, argv))
        if todo:
            preds = self.run([argv for _r, _k, argv in todo])
            self.planner_runs += len(todo)
            for (r, key, _argv), p in zip(todo, preds):
                self.cache[(r["id"], key)] = p
                out[r["id"]] = p
        return out


def load_profiles(profiles_dir, stems):
    out = {}
    for s in stems:
        with open(os.path.join(profiles_dir, s + ".json"), encoding="utf-8") as f:
            out[s] = json.load(f)
    return out


def stems_of(fits):
    """Every profile a fits list reads or writes."""
    s = set()
    for f in fits:
        s.update(f["profiles"])
        for p in f["params"]:
            s.update(targets(f, p))
            if p["kind"] == "gemm-scale":
                s.add(p["base"])
    return sorted(s)
