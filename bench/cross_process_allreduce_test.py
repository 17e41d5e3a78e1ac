"""bench/cross_process_allreduce.py at its smallest: 2 ranks as processes,
one 4 KiB size, one repetition. It must end, print the comparison, and
write a figure whose ratio is its value over PyTorch's (or say that
PyTorch's side was skipped where torch is missing)."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = "bench/cross_process_allreduce.py"
BENCH = "bench/gloo_allreduce_bench"


class CrossProcessAllReduceTest(unittest.TestCase):

    def test_two_processes_against_torch(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "figures.json")
            run = subprocess.run(
                [sys.executable, SCRIPT, f"--bench_bin={BENCH}", "--ranks=2",
                 "--sizes=4096,65536", "--repetitions=1",
                 "--seconds_per_repetition=0.01", "--timeout_s=100",
                 f"--json={out}"],
                capture_output=True, text=True, timeout=270)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            self.assertIn("2 ranks (processes)", run.stdout)
            with open(out) as f:
                figures = json.load(f)
        if "skipped" in run.stdout:
            self.assertEqual(figures, [])
            return
        self.assertEqual([f["name"] for f in figures],
                         ["allreduce/processes/2_ranks/4096B",
                          "allreduce/processes/2_ranks/65536B"])
        for f in figures:
            self.assertGreater(f["value"], 0)
            self.assertGreater(f["baseline_value"], 0)
            self.assertAlmostEqual(f["ratio"], f["value"] / f["baseline_value"])

    def test_a_bad_rank_count_is_refused(self):
        run = subprocess.run(
            [sys.executable, SCRIPT, f"--bench_bin={BENCH}", "--ranks=1"],
            capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 2)
        self.assertIn("--ranks", run.stderr)


if __name__ == "__main__":
    unittest.main()
