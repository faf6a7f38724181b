"""Tests of tools/fit-cluster: the grid, the profile edits and the choice of the best point.

A stand-in planner reads the profile it is given and answers a step time that
follows its GEMM rows and NVLink bandwidth, so the test knows which grid point
matches the "measured" seconds.
"""
import importlib.machinery
import importlib.util
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
loader = importlib.machinery.SourceFileLoader("fit_cluster", os.path.join(ROOT, "tools", "fit-cluster"))
spec = importlib.util.spec_from_loader("fit_cluster", loader)
fit = importlib.util.module_from_spec(spec)
loader.exec_module(fit)

# Step time = 1 / (last GEMM row) + 100 / NVLink GB/s: with the profile's
# rows at 0.5 and 100 GB/s that is 2 + 1 = 3 s.
def write_fake_planner(folder):
    """FAKE_PLANNER as an executable `planner` in `folder`; its path."""
    planner = os.path.join(folder, "planner")
    with open(planner, "w") as f:
        f.write(FAKE_PLANNER)
    os.chmod(planner, 0o755)
    return planner


FAKE_PLANNER = r'''#!/usr/bin/env python3
import json, sys
p = json.load(open(sys.argv[sys.argv.index("--profile") + 1]))
e = p["device"]["gemm_efficiency"]["rows"][-1][1]
bw = p["interconnect"]["levels"][0]["bandwidth_GBps"]["value"]
print(json.dumps({"step_time_s": 1.0 / e + 100.0 / bw}))
'''


class FitClusterTest(unittest.TestCase):
    def test_set_path_edits_a_value_object_and_refuses_others(self):
        prof = {"interconnect": {"levels": [{"bandwidth_GBps": {"value": 1, "source": "s"}, "name": "x"}]}}
        fit.set_path(prof, "interconnect.levels.0.bandwidth_GBps", 102)
        self.assertEqual(prof["interconnect"]["levels"][0]["bandwidth_GBps"], {"value": 102, "source": "s"})
        with self.assertRaises(SystemExit):
            fit.set_path(prof, "interconnect.levels.0.name", 3)

    def test_grid_finds_the_point_that_reproduces_the_runs(self):
        name = "fit-test-cluster"
        rel = os.path.join("cost_profiles", name + ".json")  # as validate-published writes it
        profile = {"name": name, "device": {"gemm_efficiency": {"rows": [[1e9, 0.25], [1e12, 0.5]]}},
                   "interconnect": {"levels": [{"bandwidth_GBps": {"value": 100, "source": "s"}}]}}
        with tempfile.TemporaryDirectory() as tmp:
            planner = write_fake_planner(tmp)
            # Measured: GEMM rows x 1.25 (1 / 0.625 = 1.6 s) and 125 GB/s (0.8 s) = 2.4 s.
            rows = [{"id": "r", "outcome": "compared", "measured_s": 2.4,
                     "estimate_command": [planner, "estimate", "m.onnx", "--profile", rel, "--json"]},
                    {"id": "other", "outcome": "compared", "measured_s": 9.0,
                     "estimate_command": [planner, "estimate", "m.onnx", "--profile", "cost_profiles/x.json"]}]
            runs = os.path.join(tmp, "runs.json")
            with open(runs, "w") as f:
                json.dump({"rows": rows}, f)
            # The profile sits in a folder of its own (not the repository's
            # cost_profiles/, which other tests list while this one runs).
            profiles = os.path.join(tmp, "profiles")
            os.mkdir(profiles)
            path = os.path.join(profiles, name + ".json")
            with open(path, "w") as f:
                json.dump(profile, f)
            out = io.StringIO()
            with redirect_stdout(out):
                rc = fit.main([runs, name, "--gemm-scale", "1,1.25,1.5", "--set",
                               "interconnect.levels.0.bandwidth_GBps=100,125", "--jobs", "1",
                               "--profiles-dir", profiles])
            with open(path) as f:
                self.assertEqual(json.load(f), profile)  # the profile itself is left as it was
        self.assertEqual(rc, 0)
        lines = out.getvalue().splitlines()
        self.assertEqual(len(lines), 3 * 2 + 1)  # every grid point, then the best
        self.assertIn("over 1 rows", lines[0])   # only the rows of this profile
        self.assertEqual(lines[-1],
                         "best: gemm-scale 1.25 interconnect.levels.0.bandwidth_GBps=125: mean |error| 0.000 %")

    def test_fits_check_reruns_the_listed_fits(self):
        # Same stand-in planner: rows at 0.5 give 2 s, so measured 2.8 s needs
        # 100 / bw = 0.8 -> 125 GB/s (100 GB/s: 3.0 s, +7.1 %).
        name = "fit-test-cluster"
        profile = {"name": name, "device": {"gemm_efficiency": {"rows": [[1e9, 0.25], [1e12, 0.5]]}},
                   "interconnect": {"levels": [{"bandwidth_GBps": {"value": 125, "source": "s"}}]}}
        with tempfile.TemporaryDirectory() as tmp:
            planner = write_fake_planner(tmp)
            rows = [{"id": "r", "group": "G", "outcome": "compared", "measured_s": 2.8,
                     "estimate_command": [planner, "estimate", "m.onnx", "--profile",
                                          f"cost_profiles/{name}.json", "--json"]}]
            runs = os.path.join(tmp, "runs.json")
            with open(runs, "w") as f:
                json.dump({"rows": rows}, f)
            profiles = os.path.join(tmp, "profiles")
            os.mkdir(profiles)
            with open(os.path.join(profiles, name + ".json"), "w") as f:
                json.dump(profile, f)

            def check(committed):
                fits = os.path.join(tmp, "fits.json")
                with open(fits, "w") as f:
                    json.dump({"fits": [{"name": "bw", "profiles": [name], "groups": ["G"], "params": [
                        {"kind": "value", "key": "interconnect.levels.0.bandwidth_GBps", "value": committed,
                         "fallback": 300, "values": [75, 100, 125]}]}]}, f)
                out = io.StringIO()
                with redirect_stdout(out):
                    rc = fit.main([runs, "--fits", fits, "--check", "--jobs", "1", "--profiles-dir", profiles,
                                   "--planner", planner])
                return rc, out.getvalue()

            rc, text = check(125)
            self.assertEqual(rc, 0, text)
            self.assertIn("refit 125, committed 125 (same", text)
            # Committed 75 while the profile holds 125: the profile mismatch and
            # a refit two grid steps away both fail the check.
            rc, text = check(75)
            self.assertEqual(rc, 1)
            self.assertIn("MISMATCH", text)
            self.assertIn("DIFFERS", text)


if __name__ == "__main__":
    unittest.main()
