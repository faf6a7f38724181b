"""tools/validate_speedup_report.py: goals and speedup errors from a
planner.validate/v1 document, worked out by hand."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
import validate_speedup_report as rep  # noqa: E402


def row(i, ran=True, p=1.0, m=1.0, spread=5.0):
    return {"index": i, "name": f"r{i}", "ran": ran, "mode": "real", "layout": "dp=2", "predicted_s": 0.1,
            "measured_s": 0.2, "spread_pct": spread, "error_pct": -50.0, "predicted_speedup": p,
            "measured_speedup": m, "predicted_rank": i, "measured_rank": i}


class ModelCase(unittest.TestCase):
    def doc(self, rows, tau, regret):
        return {"profile": "cpu2", "rows": rows, "summary": {"measured_rows": len(rows), "kendall_tau": tau,
                                                             "regret": regret, "choice_predicted_speedup": 1.2,
                                                             "choice_measured_speedup": 1.1}}

    def test_goals_met(self):
        # Speedups 1.0/1.0, 0.5/0.52 (+4 %), 0.8/0.76 (-5 %): all within 10 %.
        c = rep.model_case("m", "", "", self.doc([row(1), row(2, p=0.5, m=0.52), row(3, p=0.8, m=0.76)], 0.9, 1.02))
        self.assertTrue(c["meets_goals"])
        self.assertEqual(c["worst_speedup_row"], 3)
        self.assertAlmostEqual(c["worst_speedup_error_pct"], -5.0)

    def test_each_goal_missed(self):
        # tau 0.7 < 0.8; regret 1.06 > 1.05; 0.5 predicted, 0.56 measured = +12 % > 10 %.
        # A row that did not run counts for nothing.
        c = rep.model_case("m", "", "", self.doc([row(1), row(2, p=0.5, m=0.56), row(3, ran=False)], 0.7, 1.06))
        self.assertEqual(c["goals"], {"tau": False, "regret": False, "speedup": False})
        self.assertAlmostEqual(c["worst_speedup_error_pct"], 12.0)
        md = rep.markdown([c], "0.1 0.2 0.3", "0.4 0.5 0.6")
        self.assertIn("missed: tau, regret, speedup", md)


if __name__ == "__main__":
    unittest.main()
