"""bench/pslite_table.py: ours over the data plane against the better of
ps-lite's heaps, medians over rounds, the met line, and refusals."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = "bench/pslite_table.py"
SIZES = ("1MiB", "16MiB", "64MiB")


def write_round(directory, number, ours_gbps, pslite_gbps, ours_p50=40.0):
    """One compare.sh round: every size at `ours_gbps` over the data plane
    (gRPC at half), ps-lite at `pslite_gbps` tuned and 10% less plain."""
    ours, pslite = [], []
    for op in ("push", "pull"):
        for ps in (1, 2):
            for size in SIZES:
                name = f"dense/{op}/{ps}ps/{size}"
                ours.append({"name": name + "/vs_grpc",
                             "value": ours_gbps / 2})
                ours.append({"name": name + "/data_plane/vs_grpc",
                             "value": ours_gbps})
                for heap, scale in (("tuned", 1.0), ("plain", 0.9)):
                    pslite.append({"name": name, "heap": heap,
                                   "value": pslite_gbps * scale})
            name = f"dense/{op}/{ps}ps/4KiB/p50"
            ours.append({"name": f"dense/{op}/{ps}ps/4KiB/p50",
                         "value": 100.0})
            ours.append({"name": f"dense/{op}/{ps}ps/4KiB/data_plane/p50",
                         "value": ours_p50})
            for heap in ("tuned", "plain"):
                pslite.append({"name": name, "heap": heap, "value": 120.0})
    with open(os.path.join(directory, f"ours_{number}.json"), "w") as f:
        json.dump(ours, f)
    with open(os.path.join(directory, f"pslite_{number}.jsonl"), "w") as f:
        for figure in pslite:
            f.write(json.dumps(figure) + "\n")


class PsliteTableTest(unittest.TestCase):

    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args],
                              capture_output=True, text=True, timeout=60)

    def test_medians_over_rounds_against_the_better_heap(self):
        with tempfile.TemporaryDirectory() as tmp:
            # Ours 3.0, 2.0, 2.4 GB/s (median 2.4); ps-lite 2.0 tuned.
            write_round(tmp, 1, 3.0, 2.0)
            write_round(tmp, 2, 2.0, 2.0)
            write_round(tmp, 3, 2.4, 2.0)
            run = self.run_script(tmp)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertIn("3 round(s)", run.stdout)
            self.assertIn("| push | 1 | 1MiB | 1.80 | 2.00 | 1.20 | 2.40 | "
                          "1.20 |", run.stdout)
            self.assertIn("| pull | 2 | 120 | 120 | 100 | 40 |", run.stdout)
            self.assertIn("ps-lite: met at every size", run.stdout)
            self.assertIn("no slower than ps-lite's: met", run.stdout)

    def test_names_figures_with_fewer_rounds_and_skips_blank_lines(self):
        with tempfile.TemporaryDirectory() as tmp:
            write_round(tmp, 1, 2.0, 2.0)
            write_round(tmp, 2, 2.0, 2.0)
            # Round 2's ps-lite lost its tuned 2-server rows (a crash),
            # and has a blank line.
            path = os.path.join(tmp, "pslite_2.jsonl")
            with open(path) as f:
                kept = [line for line in f
                        if not ('"heap": "tuned"' in line and "/2ps/" in line)]
            with open(path, "w") as f:
                f.writelines(kept + ["\n"])
            run = self.run_script(tmp)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertIn("fewer than 2 rounds: dense/pull/2ps/16MiB "
                          "(tuned): 1", run.stdout)
            self.assertNotIn("/1ps/1MiB (tuned): 1", run.stdout)

    def test_says_what_is_not_met(self):
        with tempfile.TemporaryDirectory() as tmp:
            write_round(tmp, 1, 1.5, 2.0, ours_p50=130.0)
            run = self.run_script(tmp)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertIn("| 0.75 |", run.stdout)
            self.assertIn("not met for dense/push/1ps/1MiB", run.stdout)
            self.assertIn("no slower than ps-lite's: not met for "
                          "dense/push/1ps/4KiB", run.stdout)

    def test_refuses_what_is_not_compare_sh_results(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = self.run_script(tmp)
            self.assertEqual(run.returncode, 1)
            self.assertIn("has no pslite_*.jsonl and ours_*.json",
                          run.stderr)
            write_round(tmp, 1, 2.0, 2.0)
            with open(os.path.join(tmp, "pslite_1.jsonl"), "a") as f:
                f.write("{not json\n")
            run = self.run_script(tmp)
            self.assertEqual(run.returncode, 1)
            self.assertIn("pslite_1.jsonl:", run.stderr)
            self.assertIn("not a ps-lite figure", run.stderr)
        run = self.run_script()
        self.assertEqual(run.returncode, 1)
        self.assertIn("usage", run.stderr)


if __name__ == "__main__":
    unittest.main()
