"""Tests of tools/check_folder_cycles.py on small trees made for each test."""

import contextlib
import io
import os
import sys
import tempfile
import textwrap
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_folder_cycles  # noqa: E402


class FolderCyclesTest(unittest.TestCase):

    def setUp(self):
        self._dir = tempfile.TemporaryDirectory()
        self.root = self._dir.name
        self.write("WORKSPACE", 'workspace(name = "t")\n')

    def tearDown(self):
        self._dir.cleanup()

    def write(self, path, text):
        full = os.path.join(self.root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(textwrap.dedent(text))

    def library(self, package, deps=(), name="lib", srcs=()):
        """Appends a cc_library with `deps` to `package`'s BUILD file."""
        path = os.path.join(self.root, package, "BUILD.bazel")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a") as f:
            f.write("cc_library(name = %r, srcs = %r, deps = %r)\n" %
                    (name, list(srcs), list(deps)))

    def cycles(self):
        return check_folder_cycles.find_cycles(
            check_folder_cycles.dependency_graph(self.root))

    def test_two_folders_using_each_other_are_a_cycle(self):
        self.library("a", deps=["//b:lib"])
        self.library("b", deps=["//a"])
        self.library("c", deps=["//a:lib", "//b:lib"])
        self.assertEqual(self.cycles(), [["a", "b"]])

    def test_one_way_dependencies_are_no_cycle(self):
        self.library("a", deps=["//b:lib", "//c:lib"])
        self.library("b", deps=["//c:lib"])
        self.library("c", deps=[":other"])
        self.assertEqual(self.cycles(), [])

    def test_a_longer_cycle_is_reported_once_with_all_its_folders(self):
        self.library("x/a", deps=["//x/b:lib"])
        self.library("x/b", deps=["//y:lib"])
        self.library("y", deps=["//x/a:lib"])
        self.assertEqual(self.cycles(), [["x/a", "x/b", "y"]])

    def test_an_include_counts_like_a_dep(self):
        self.library("a", srcs=["a.cc"])
        self.write("a/a.cc", '#include "b/b.h"\n#include <vector>\n')
        self.library("b", deps=["//a"])
        self.write("b/b.h", "")
        graph = check_folder_cycles.dependency_graph(self.root)
        self.assertEqual(check_folder_cycles.find_cycles(graph), [["a", "b"]])
        self.assertEqual(graph["a"]["b"], ['a/a.cc:1: #include "b/b.h"'])

    def test_includes_of_generated_and_outside_headers_are_placed(self):
        # proto/x.pb.h does not exist in the tree: its folder still decides.
        self.library("proto", deps=["//a"])
        self.library("a", srcs=["a.cc"])
        self.write("a/a.cc", '#include "proto/x.pb.h"\n'
                   '#include "absl/status/status.h"\n')
        self.assertEqual(self.cycles(), [["a", "proto"]])

    def test_a_sub_package_is_a_folder_of_its_own(self):
        self.library("a", deps=["//a/sub"])
        self.library("a/sub", srcs=["sub.cc"])
        self.write("a/sub/sub.cc", '#include "b/b.h"\n')
        self.library("b", deps=["//a/sub:lib"])
        graph = check_folder_cycles.dependency_graph(self.root)
        self.assertEqual(check_folder_cycles.find_cycles(graph),
                         [["a/sub", "b"]])
        self.assertNotIn("b", graph["a"])

    def test_tests_may_use_folders_above_them(self):
        # A test sits at the top of the graph wherever it lives: a client test
        # may start the server binary that is built on the client.
        self.write("a/BUILD.bazel", """\
            cc_library(name = "lib", srcs = ["a.cc"])
            cc_test(name = "a_test", srcs = ["a_test.cc"], deps = ["//b"])
            sh_test(name = "run_test", srcs = ["run.sh"], data = ["//b:bin"])
        """)
        self.write("a/a_test.cc", '#include "b/b.h"\n')
        self.library("b", deps=["//a:lib"])
        self.assertEqual(self.cycles(), [])

    def test_visibility_is_no_dependency(self):
        self.write("a/BUILD.bazel", """\
            package(default_visibility = ["//b:__pkg__"])
            cc_library(name = "lib", visibility = ["//c:__subpackages__"])
        """)
        self.library("b", deps=["//a:lib"])
        self.library("c", deps=["//a:lib"])
        self.assertEqual(self.cycles(), [])

    def test_labels_in_variables_selects_and_genrules_count(self):
        self.write("a/BUILD.bazel", """\
            COMMON = ["//b:one"]  # comment with //c:lib, not a label
            cc_library(
                name = "lib",
                deps = COMMON + select({
                    "//conditions:default": ["//d:lib"],
                }),
            )
            genrule(name = "g", outs = ["g.h"], cmd = "$(location //e:tool)")
        """)
        for package in ("b", "c", "d", "e"):
            self.library(package, deps=["//a:lib"])
        self.assertEqual(self.cycles(), [["a", "b", "d", "e"]])

    def test_other_workspaces_and_bazel_links_are_skipped(self):
        self.library("a", deps=["//b"])
        self.library("b")
        # A local repository: its "//a" is its own package, not ours.
        self.write("third_party/rules/WORKSPACE", "")
        self.library("third_party/rules/a", deps=["//a"])
        self.library("b", name="uses_rules",
                     deps=["//third_party/rules/a"])
        self.write("bazel-out/x/BUILD.bazel", 'cc_library(deps = ["//a"])\n')
        graph = check_folder_cycles.dependency_graph(self.root)
        self.assertEqual(sorted(graph), ["a", "b"])
        self.assertEqual(check_folder_cycles.find_cycles(graph), [])

    def test_main_prints_what_makes_each_cycle_and_fails(self):
        self.library("a", deps=["//b:lib"])
        self.library("b", deps=["//a:lib"])
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = check_folder_cycles.main(["check", self.root])
        self.assertEqual(status, 1)
        self.assertIn("folder cycle between a, b:\n"
                      "  a -> b\n"
                      "      a/BUILD.bazel:1: //b:lib\n"
                      "  b -> a\n"
                      "      b/BUILD.bazel:1: //a:lib\n", out.getvalue())

    def test_main_succeeds_without_cycles(self):
        self.library("a", deps=["//b:lib"])
        self.library("b")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = check_folder_cycles.main(["check", self.root])
        self.assertEqual(status, 0)
        self.assertIn("no folder cycles among 2 packages", out.getvalue())

    def test_main_refuses_a_folder_that_is_no_workspace(self):
        os.remove(os.path.join(self.root, "WORKSPACE"))
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            status = check_folder_cycles.main(["check", self.root])
        self.assertEqual(status, 2)
        self.assertIn("no WORKSPACE", err.getvalue())


if __name__ == "__main__":
    unittest.main()
