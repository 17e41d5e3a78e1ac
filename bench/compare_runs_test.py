"""bench/compare_runs.py on hand-made --json files: it must name the figures
that moved more than --within, pass when none did, and refuse files that
are not //bench's figures."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = "bench/compare_runs.py"


def figure(name, ratio):
    return {"name": name, "value": ratio, "unit": "GB/s",
            "baseline": "grpc", "baseline_value": 1.0, "ratio": ratio}


class CompareRunsTest(unittest.TestCase):

    def run_script(self, *runs, extra=()):
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for i, run in enumerate(runs):
                path = os.path.join(tmp, f"run{i}.json")
                with open(path, "w") as f:
                    f.write(run if isinstance(run, str) else json.dumps(run))
                paths.append(path)
            return subprocess.run([sys.executable, SCRIPT, *paths, *extra],
                                  capture_output=True, text=True, timeout=60)

    def test_names_the_figures_that_moved(self):
        # steady: 1.0 and 1.1 lie within ±5% of 1.05; noisy: 1.0 and 2.0
        # within ±33% of 1.5.
        run = self.run_script([figure("steady", 1.0), figure("noisy", 1.0)],
                              [figure("steady", 1.1), figure("noisy", 2.0)])
        self.assertEqual(run.returncode, 1, run.stdout + run.stderr)
        lines = {line.split()[0]: line for line in run.stdout.splitlines()}
        self.assertIn("±5%", lines["steady"])
        self.assertNotIn("<-", lines["steady"])
        self.assertIn("±33%", lines["noisy"])
        self.assertIn("<-", lines["noisy"])
        self.assertIn("1 of 2 figures within ±15%", run.stdout)

    def test_passes_when_every_figure_stayed_and_counts_missing_ones(self):
        run = self.run_script([figure("a", 1.0), figure("only_here", 3.0)],
                              [figure("a", 1.02)], [figure("a", 0.99)])
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertIn("1 of 1 figures within ±15%", run.stdout)
        self.assertIn("1 figures not in every run", run.stdout)
        self.assertNotIn("only_here ", run.stdout)

    def test_a_wider_tolerance_lets_a_figure_pass(self):
        run = self.run_script([figure("noisy", 1.0)], [figure("noisy", 2.0)],
                              extra=["--within=40"])
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)

    def test_refuses_what_is_not_a_list_of_figures(self):
        run = self.run_script("{not json", [figure("a", 1.0)])
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("cannot read", run.stderr)
        self.assertIn("run0.json", run.stderr)
        run = self.run_script([{"value": 1.0}], [figure("a", 1.0)])
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("entry 0 lacks one of name, ratio", run.stderr)


if __name__ == "__main__":
    unittest.main()
