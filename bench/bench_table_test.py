"""bench/bench_table.py: the README's headline rows from a full run's --json
file (the one committed under bench/results), and clear refusals of files
that are not one."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = "bench/bench_table.py"
FULL_RUN = "bench/results/2026-11-29-final.json"


class BenchTableTest(unittest.TestCase):

    def run_script(self, path):
        return subprocess.run([sys.executable, SCRIPT, path],
                              capture_output=True, text=True, timeout=60)

    def test_rows_of_a_full_run(self):
        run = self.run_script(FULL_RUN)
        self.assertEqual(run.returncode, 0, run.stderr)
        rows = run.stdout.splitlines()
        self.assertEqual(len(rows), 17)
        with open(FULL_RUN) as f:
            figures = {fig["name"]: fig for fig in json.load(f)}
        # The 1 ps, 1 MiB data-plane push's ratio, as the run wrote it.
        ratio = figures["dense/push/1ps/1MiB/data_plane/vs_grpc"]["ratio"]
        self.assertIn("**%.2f / " % ratio, rows[0])
        # The sparse rows count the 16 cases at 10k and 100k ids.
        sparse = [r for r in rows if r.startswith("| sparse")]
        self.assertEqual(len(sparse), 4)
        for row in sparse:
            self.assertIn("of 16)", row)
        pushes = [figures[n]["ratio"] for n in figures
                  if n.startswith("sparse/push/")
                  and ("/10k_ids" in n or "/100k_ids" in n)
                  and not n.endswith("/data_plane")]
        self.assertEqual(len(pushes), 16)
        self.assertIn("%.2f – " % min(pushes), sparse[2])

    def test_refuses_what_is_not_a_full_run(self):
        with tempfile.TemporaryDirectory() as tmp:
            quick = os.path.join(tmp, "quick.json")
            with open(quick, "w") as f:
                json.dump([{"name": "dense/push/1ps/1MiB/vs_grpc",
                            "value": 1.0, "baseline_value": 1.0,
                            "ratio": 1.0}], f)
            run = self.run_script(quick)
            self.assertEqual(run.returncode, 1)
            self.assertIn("has no figure dense/push/1ps/16MiB/vs_grpc",
                          run.stderr)

            broken = os.path.join(tmp, "broken.json")
            with open(broken, "w") as f:
                f.write("[{")
            run = self.run_script(broken)
            self.assertEqual(run.returncode, 1)
            self.assertIn("cannot read " + broken, run.stderr)

            odd = os.path.join(tmp, "odd.json")
            with open(odd, "w") as f:
                json.dump([{"name": "x"}], f)
            run = self.run_script(odd)
            self.assertEqual(run.returncode, 1)
            self.assertIn("entry 0 lacks", run.stderr)

        run = self.run_script(os.path.join("no", "such.json"))
        self.assertEqual(run.returncode, 1)
        self.assertIn("cannot read", run.stderr)


if __name__ == "__main__":
    unittest.main()
