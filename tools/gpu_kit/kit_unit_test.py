#!/usr/bin/env python3
"""Unit tests of the GPU kit's runner pieces (kit_test.sh runs them)."""

import os
import tempfile
import unittest

import cuda_libraries
from kit_summary import gtest_results, text_lines


def touch(folder, name):
    os.makedirs(folder, exist_ok=True)
    open(os.path.join(folder, name), "w").close()


class ChooseTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()

    def folder(self, name):
        return os.path.join(self.root, name)

    def test_takes_each_library_from_the_first_folder_that_has_it(self):
        touch(self.folder("wheels"), "libcudart.so.13")
        touch(self.folder("toolkit"), "libcudart.so.13")
        touch(self.folder("toolkit"), "libnccl.so.2")
        chosen, problems = cuda_libraries.choose(
            ["libcudart.so.13", "libnccl.so.2"],
            [self.folder("wheels"), self.folder("toolkit")], "13.0")
        self.assertEqual(problems, [])
        self.assertEqual(chosen["libcudart.so.13"],
                         os.path.join(self.folder("wheels"), "libcudart.so.13"))
        self.assertEqual(chosen["libnccl.so.2"],
                         os.path.join(self.folder("toolkit"), "libnccl.so.2"))

    def test_keeps_cublaslt_beside_the_cublas_it_belongs_to(self):
        touch(self.folder("first"), "libcublasLt.so.13")
        touch(self.folder("second"), "libcublas.so.13")
        touch(self.folder("second"), "libcublasLt.so.13")
        chosen, _ = cuda_libraries.choose(
            ["libcublasLt.so.13", "libcublas.so.13"],
            [self.folder("first"), self.folder("second")], "13.0")
        self.assertEqual(os.path.dirname(chosen["libcublas.so.13"]),
                         os.path.dirname(chosen["libcublasLt.so.13"]))

    def test_names_a_missing_library_and_another_major_version(self):
        touch(self.folder("old"), "libcudart.so.12")
        chosen, problems = cuda_libraries.choose(
            ["libcudart.so.13", "libnccl.so.2"], [self.folder("old")], "13.0")
        self.assertEqual(chosen, {})
        self.assertIn("libcudart.so.13 not found; there is only", problems[0])
        self.assertIn("libcudart.so.12: another major version (the kit was "
                      "built with CUDA 13.0)", problems[0])
        self.assertEqual(problems[1], "libnccl.so.2 not found")

    def test_search_dirs_prefers_ld_library_path_then_wheels(self):
        site = self.folder("site")
        touch(os.path.join(site, "nvidia", "cu13", "lib"), "libcudart.so.13")
        explicit = self.folder("explicit")
        os.makedirs(explicit)
        dirs = cuda_libraries.search_dirs(
            [site], {"LD_LIBRARY_PATH": explicit + ":/nonexistent"})
        self.assertEqual(dirs[:2], [explicit,
                                    os.path.join(site, "nvidia", "cu13",
                                                 "lib")])
        self.assertNotIn("/nonexistent", dirs)


class GtestResultsTest(unittest.TestCase):
    def write(self, text):
        handle, path = tempfile.mkstemp(suffix=".xml")
        with os.fdopen(handle, "w") as f:
            f.write(text)
        return path

    def test_counts_passed_failed_and_skipped_with_reasons(self):
        path = self.write(
            '<testsuites><testsuite name="S">'
            '<testcase name="a" classname="S" status="run" result="completed"/>'
            '<testcase name="b" classname="S" status="run" result="completed">'
            '<failure message="x.cc:3&#10;expected 1"/></testcase>'
            '<testcase name="c" classname="S" status="run" result="skipped">'
            '<skipped message="x.cc:9&#10;no usable GPU: no driver"/>'
            '</testcase>'
            '<testcase name="d" classname="S" status="run" result="skipped">'
            '<skipped message="x.cc:9&#10;no usable GPU: no driver"/>'
            '</testcase></testsuite></testsuites>')
        result = gtest_results(path)
        self.assertEqual((result["passed"], result["failed"],
                          result["skipped"], result["cases"]), (1, 1, 2, 4))
        self.assertEqual(result["skip_reasons"], ["no usable GPU: no driver"])
        self.assertIn("S.b: x.cc:3", result["failures"][0])

    def test_a_missing_or_broken_report_has_no_cases(self):
        self.assertEqual(gtest_results("/nonexistent.xml")["cases"], 0)
        self.assertEqual(gtest_results(self.write("<testsuites"))["cases"], 0)


class TextLinesTest(unittest.TestCase):
    def test_a_figure_without_a_value_is_a_question_mark(self):
        summary = {"seconds": 3, "machine": {"cpus": 2, "gpus": []},
                   "setup": {"status": "passed"},
                   "parts": {"gpu_bench": {
                       "status": "passed", "reason": "1 figure",
                       "figures": [{"name": "kernels/gemm/4096",
                                    "value": float("nan"), "unit": "GFLOP/s",
                                    "ratio": None, "baseline": "cpu"}]}}}
        lines = text_lines(summary, {"commit": "c", "cuda_version": "13.0"},
                           ["gpu_bench"])
        self.assertIn("gpu_bench  passed   1 figure", lines)
        self.assertRegex(lines[-1], r"kernels/gemm/4096 +\? GFLOP/s +\?x cpu")


if __name__ == "__main__":
    unittest.main()
