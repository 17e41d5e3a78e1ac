"""distrt_fuzz_test: a libFuzzer target that is also a regression test.

Built plainly (gcc, the default), the target links //fuzz:replay_main and
`bazel test` runs LLVMFuzzerTestOneInput once on every file of its seed
corpus, fuzz/corpus/<corpus>/. Built with `--config=fuzz` (clang, see
.bazelrc), it links libFuzzer instead: `bazel test` still only replays the
corpus (-runs=0), and the binary in bazel-bin/fuzz fuzzes for as long as it
is asked (fuzz/run_fuzzers.sh).
"""

def distrt_fuzz_test(name, srcs, deps = [], corpus = None):
    """A cc_test `name` (ending in "_fuzzer") defining LLVMFuzzerTestOneInput.

    Args:
      name: the target, e.g. "csv_reader_fuzzer".
      srcs: its sources; one defines LLVMFuzzerTestOneInput.
      deps: what they use.
      corpus: the seed corpus directory under fuzz/corpus/; by default the
        name without "_fuzzer".
    """
    if corpus == None:
        if not name.endswith("_fuzzer"):
            fail("a fuzz target's name ends with _fuzzer: " + name)
        corpus = name[:-len("_fuzzer")]
    native.cc_test(
        name = name,
        size = "small",
        srcs = srcs,
        deps = deps + select({
            "//fuzz:libfuzzer": [],
            "//conditions:default": ["//fuzz:replay_main"],
        }),
        linkopts = select({
            "//fuzz:libfuzzer": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        # libFuzzer given a directory fuzzes it for ever (adding to it);
        # -runs=0 runs its inputs once, as replay_main does.
        args = select({
            "//fuzz:libfuzzer": ["-runs=0"],
            "//conditions:default": [],
        }) + ["fuzz/corpus/" + corpus],
        data = native.glob(["corpus/%s/**" % corpus]),
        tags = ["fuzz"],
    )
