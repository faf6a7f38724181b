"""Tests of the published-sweep report of `--search` mode
(tools/validate_published/search_sweeps.py) on invented rows."""
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from validate_published import search_sweeps  # noqa: E402


def row(rid, sweep, layout, measured, predicted, searched, searched_s, outcome="compared"):
    return {"id": rid, "outcome": outcome, "rank_set": sweep, "published_layout": layout, "measured_s": measured,
            "published_s": predicted, "search_layout": searched, "search_s": searched_s}


class SweepTest(unittest.TestCase):
    def test_searched_layout_in_the_sweep_ranks_by_measurement(self):
        # Sweep A: three measured layouts; the search picks L2 (measured
        # 110 s, second of three; the fastest is L1 at 100 s): regret
        # 110 / 100 - 1 = +10 %.
        rows = [row("a1", "A", "L1", 100.0, 105.0, "L2", 90.0),
                row("a2", "A", "L2", 110.0, 95.0, "L2", 90.0),
                row("a3", "A", "L3", 120.0, 99.0, "L2", 90.0)]
        sw = search_sweeps.sweeps(rows)
        self.assertEqual(len(sw), 1)
        x = sw[0]
        self.assertEqual((x["rows"], x["measured_best_id"], x["measured_best_s"], x["measured_best_predicted_s"]),
                         (3, "a1", 100.0, 105.0))
        self.assertEqual(len(x["searched"]), 1)
        s = x["searched"][0]
        self.assertTrue(s["in_sweep"])
        self.assertEqual((s["measured_id"], s["measured_s"], s["measured_rank"]), ("a2", 110.0, 2))
        self.assertAlmostEqual(s["measured_regret_pct"], 10.0)
        self.assertEqual(search_sweeps.summary(sw),
                         {"sweeps": 1, "searched_layouts": 1, "in_sweep": 1, "worst_measured_regret_pct":
                          s["measured_regret_pct"], "worst_measured_regret_id": "a2"})

    def test_repeated_layout_counts_its_fastest_measurement(self):
        # L1 measured twice (130 s, 100 s) and L2 once (120 s); the search
        # picks L1: its fastest run is the sweep's fastest, regret 0, rank 1.
        rows = [row("b1", "B", "L1", 130.0, 101.0, "L1", 101.0),
                row("b2", "B", "L1", 100.0, 101.0, "L1", 101.0),
                row("b3", "B", "L2", 120.0, 110.0, "L1", 101.0)]
        s = search_sweeps.sweeps(rows)[0]["searched"][0]
        self.assertEqual((s["measured_id"], s["measured_rank"], s["measured_regret_pct"]), ("b2", 1, 0.0))

    def test_pick_outside_the_sweep_is_not_judged(self):
        # The search picks L9, which the source never ran; a second sweep of
        # one row and rows without a measurement or not compared are no sweep.
        rows = [row("c1", "C", "L1", 100.0, 100.0, "L9", 80.0),
                row("c2", "C", "L2", 120.0, 110.0, "L9", 80.0),
                row("d1", "D", "L1", 100.0, 100.0, "L1", 100.0),
                row("c3", "C", "L3", None, 90.0, "L9", 80.0),
                row("c4", "C", "L4", 90.0, 90.0, "L9", 80.0, outcome="search_failed")]
        sw = search_sweeps.sweeps(rows)
        self.assertEqual([x["set"] for x in sw], ["C"])
        self.assertEqual(sw[0]["rows"], 2)
        self.assertEqual(sw[0]["searched"], [{"layout": "L9", "predicted_s": 80.0, "in_sweep": False}])
        self.assertEqual(search_sweeps.summary(sw)["in_sweep"], 0)
        self.assertIsNone(search_sweeps.summary(sw)["worst_measured_regret_pct"])
        lines = search_sweeps.markdown(sw, lambda v: f"{v:.4g}")
        self.assertIn("no (not measured by the source)", lines[-1])


if __name__ == "__main__":
    unittest.main()
