"""Tests of the leave-one-source-group-out logic (tools/validate_published/crossval.py)
and of the fits it reruns (fits.py), on invented rows with a stand-in estimator.

The stand-in predicts a row as WORK / k, where k is the profile's
device.k.value: the arithmetic of every expected number is in the comments.
"""
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from validate_published import crossval, fits as fitlib  # noqa: E402

WORK = {"a1": 2.0, "b1": 1.0, "c1": 2.0, "d1": 2.2}


def row(rid, group, profile, measured, k):
    pred = WORK[rid] / k
    return {"id": rid, "group": group, "outcome": "compared", "measured_s": measured, "predicted_s": pred,
            "error_pct": (pred - measured) / measured * 100,
            "estimate_command": ["planner", "estimate", f"m/{rid}.onnx", "--profile", f"cost_profiles/{profile}.json",
                                 "--json"],
            "model_command": ["planner", "model", "gpt", "--seq", "2048", "-o", f"m/{rid}.onnx"]}


def prof(k):
    return {"device": {"k": {"value": k, "source": "s"}}}


class Stand:
    """estimate(rows, profiles) -> {id: WORK / k}; records the rows it was asked for."""

    def __init__(self):
        self.asked = []

    def __call__(self, rows, profiles):
        self.asked += [r["id"] for r in rows]
        return {r["id"]: WORK[r["id"]] / profiles[fitlib.row_profile(r)]["device"]["k"]["value"] for r in rows}


# F1 sets pa's k, fitted on groups A and B; F2 sets pb's k, fitted on C alone.
FITS = [
    {"name": "F1", "profiles": ["pa"], "groups": ["A", "B"], "search": "joint",
     "params": [{"kind": "value", "key": "device.k", "value": 2.0, "fallback": 4.0, "values": [0.5, 1.0, 2.0]}]},
    {"name": "F2", "profiles": ["pb"], "groups": ["C"], "search": "joint",
     "params": [{"kind": "value", "key": "device.k", "value": 2.0, "fallback": 1.0, "values": [1.0, 2.0]}]},
]


class CrossValidateTest(unittest.TestCase):
    def setUp(self):
        # Committed: pa k = 2 (F1 on A+B: mean |err| at 0.5 = (300+100)/2 = 200,
        # at 1 = (100+0)/2 = 50, at 2 = (0+50)/2 = 25 -> 2), pb k = 2.
        self.rows = [row("a1", "A", "pa", 1.0, 2.0),   # 2/2 = 1.0: 0 %
                     row("b1", "B", "pa", 1.0, 2.0),   # 1/2 = 0.5: -50 %
                     row("c1", "C", "pb", 1.0, 2.0),   # 2/2 = 1.0: 0 %
                     row("d1", "D", "pa", 1.0, 2.0)]   # 2.2/2 = 1.1: +10 %
        self.profiles = {"pa": prof(2.0), "pb": prof(2.0)}

    def test_committed_fit_reproduces_on_all_its_groups(self):
        values, m = fitlib.run_fit(FITS[0], fitlib.training_rows(FITS[0], self.rows), self.profiles, Stand())
        self.assertEqual(values, {"device.k": 2.0})
        self.assertAlmostEqual(m, 25.0)

    def test_each_group_held_out(self):
        stand = Stand()
        x = crossval.cross_validate(self.rows, FITS, self.profiles, stand)
        g = x["groups"]
        self.assertEqual(list(g), ["A", "B", "C", "D"])
        # A out: F1 on B alone: |err| of b1 at k 0.5 = 100, 1 = 0, 2 = 50 -> 1;
        # a1 = 2/1 = 2.0 s: +100 %.
        self.assertEqual(g["A"]["refits"][0]["how"], "refit")
        self.assertEqual(g["A"]["refits"][0]["trained_on"], ["B"])
        self.assertEqual(g["A"]["refits"][0]["values"], {"device.k": 1.0})
        self.assertAlmostEqual(g["A"]["held_out"]["mean_abs_error_pct"], 100.0)
        self.assertAlmostEqual(g["A"]["in_sample"]["mean_abs_error_pct"], 0.0)
        # B out: F1 on A alone: a1 at 0.5 = 300, 1 = 100, 2 = 0 -> 2 (= committed): b1 stays -50 %.
        self.assertEqual(g["B"]["refits"][0]["values"], {"device.k": 2.0})
        self.assertAlmostEqual(g["B"]["held_out"]["mean_signed_error_pct"], -50.0)
        # C out: F2 has no other group -> fallback k = 1: c1 = 2/1 = 2.0 s: +100 %.
        self.assertEqual(g["C"]["refits"][0]["how"], "fallback")
        self.assertEqual(g["C"]["refits"][0]["values"], {"device.k": 1.0})
        self.assertAlmostEqual(g["C"]["held_out"]["mean_abs_error_pct"], 100.0)
        # D: no fit trained on it: held out = in sample (+10 %), nothing estimated.
        self.assertEqual(g["D"]["refits"], [])
        self.assertAlmostEqual(g["D"]["held_out"]["mean_abs_error_pct"], 10.0)
        self.assertNotIn("d1", stand.asked)
        # Overall: in sample |err| 0, 50, 0, 10 -> mean 15, p90 (rank ceil(3.6) = 4) 50;
        # held out 100, 50, 100, 10 -> mean 65, p90 100, signed (100-50+100+10)/4 = 40.
        o = x["overall"]
        self.assertAlmostEqual(o["in_sample"]["mean_abs_error_pct"], 15.0)
        self.assertAlmostEqual(o["in_sample"]["p90_abs_error_pct"], 50.0)
        self.assertAlmostEqual(o["held_out"]["mean_abs_error_pct"], 65.0)
        self.assertAlmostEqual(o["held_out"]["p90_abs_error_pct"], 100.0)
        self.assertAlmostEqual(o["held_out"]["mean_signed_error_pct"], 40.0)
        self.assertAlmostEqual(self.rows[0]["held_out_predicted_s"], 2.0)
        self.assertAlmostEqual(self.rows[3]["held_out_error_pct"], 10.0)
        # The committed profiles are not edited.
        self.assertEqual(self.profiles, {"pa": prof(2.0), "pb": prof(2.0)})


class FitSearchTest(unittest.TestCase):
    def test_range_refines_around_the_coarse_best(self):
        # measured = 1 / 0.37: |err|(k) = |0.37/k - 1|. Coarse 0.2..0.6 step 0.1:
        # 0.3 -> 23.3 %, 0.4 -> 7.5 % (best); then 0.30..0.50 step 0.01 -> 0.37 (0 %).
        WORK["z"] = 1.0
        r = row("z", "A", "pa", 1 / 0.37, 1.0)
        f = {"name": "R", "profiles": ["pa"], "groups": ["A"], "search": "coordinate",
             "params": [{"kind": "value", "key": "device.k", "value": 0.37, "fallback": 1.0,
                         "range": {"lo": 0.2, "hi": 0.6, "steps": [0.1, 0.01]}}]}
        seen = []
        values, m = fitlib.run_fit(f, [r], {"pa": prof(1.0)}, Stand(), seen.append)
        self.assertEqual(values, {"device.k": 0.37})
        self.assertAlmostEqual(m, 0.0, places=9)
        # 5 coarse points + 21 fine ones (0.30..0.50) less the 3 already scored, + the final score.
        self.assertEqual(len(seen), 5 + 21 - 3 + 1)
        self.assertEqual(fitlib.resolution(f["params"][0]), 0.01)

    def test_row_filters(self):
        r = row("a1", "A", "pa", 1.0, 1.0)
        r["estimate_command"] += ["--precision", "fp8"]
        self.assertTrue(fitlib.row_matches(r, {"args": {"--precision": "fp8"}, "seq_min": 2048, "seq_max": 2048}))
        self.assertFalse(fitlib.row_matches(r, {"args": {"--precision": "bf16"}}))
        self.assertFalse(fitlib.row_matches(r, {"seq_min": 4096}))
        # exclude_archs: by the row's `planner model` architecture.
        self.assertEqual(fitlib.row_arch(r), "gpt")
        self.assertTrue(fitlib.row_matches(r, {"exclude_archs": ["moe", "llama-moe"]}))
        moe = row("a2", "A", "pa", 1.0, 1.0) if "a2" in WORK else dict(r, id="a2")
        moe["model_command"] = ["planner", "model", "llama-moe", "--seq", "2048", "-o", "m/a2.onnx"]
        self.assertFalse(fitlib.row_matches(moe, {"exclude_archs": ["moe", "llama-moe"]}))
        f = dict(FITS[0], where={"args": {"--precision": "fp8"}})
        other = row("b1", "B", "pa", 1.0, 1.0)
        self.assertEqual([x["id"] for x in fitlib.training_rows(f, [r, other])], ["a1"])
        self.assertEqual(fitlib.training_rows(f, [r, other], ["B"]), [])

    def test_gemm_scale_and_static_check(self):
        base = {"device": {"gemm_efficiency": {"rows": [[1e9, 0.5], [1e12, 0.8]]}}}
        scaled = {"device": {"gemm_efficiency": {"rows": [[1e9, 0.45], [1e12, 0.72]]}}}  # x 0.9
        f = {"name": "G", "profiles": ["s"], "groups": ["A"], "params": [
            {"kind": "gemm-scale", "base": "b", "value": 0.9, "fallback": 1.0, "values": [0.9, 1.0]}]}
        self.assertEqual(fitlib.static_check([f], {"b": base, "s": scaled}), [])
        scaled["device"]["gemm_efficiency"]["rows"][1][1] = 0.73
        self.assertEqual(len(fitlib.static_check([f], {"b": base, "s": scaled})), 1)

    def test_estimator_reuses_in_sample_and_caches(self):
        calls = []

        def run(argvs):
            calls.append(len(argvs))
            return [7.0] * len(argvs)

        r = row("a1", "A", "pa", 1.0, 2.0)
        with tempfile.TemporaryDirectory() as tmp:
            est = fitlib.Estimator({"pa": prof(2.0)}, tmp, run)
            self.assertEqual(est([r], {"pa": prof(2.0)}), {"a1": 1.0})  # committed: the in-sample 2/2
            self.assertEqual(est([r], {"pa": prof(3.0)}), {"a1": 7.0})
            self.assertEqual(est([r], {"pa": prof(3.0)}), {"a1": 7.0})  # cached
        self.assertEqual(calls, [1])
        self.assertEqual(est.planner_runs, 1)


if __name__ == "__main__":
    unittest.main()
