#ifndef DISTRT_BENCH_INPUT_BENCH_H_
#define DISTRT_BENCH_INPUT_BENCH_H_

#include "absl/status/status.h"
#include "bench/bench_family.h"
#include "bench/bench_report.h"

namespace distrt::bench {

// The input family (the streaming input pipeline, runtime/input), on
// Criteo-shaped TFRecord data and LIBSVM data that gen_data writes into the
// scratch directory and that the family removes again:
// (1) parse throughput: examples/s of the streaming pipeline (parse and
//     batch, no training) with 1 and 2 parse threads, against reading the
//     same files' records and checking their CRCs without parsing;
// (2) streaming costs nothing: examples/s of in-process training (one CPU
//     device) with the streaming pipeline against the same job with the
//     same examples preloaded in memory, for the DLRM example
//     (examples/torch/dlrm.py) on TFRecord and for logreg on LIBSVM, with
//     the parse cost per example beside each;
// (3) memory is bounded: the peak RSS of a real worker process training
//     wide_deep for one epoch over 10 GB of TFRecord data (quick: 1 GB),
//     against the data's size (skipped, with a note, without twice that
//     free on the scratch directory's file system);
// (4) against PyTorch: examples/s of the pipeline against a PyTorch
//     DataLoader over an IterableDataset parsing the same files with
//     Python's protobuf, with 0 and 2 loader workers.
absl::Status RunInputBench(const BenchConfig& config, BenchReport* report);

}  // namespace distrt::bench

#endif  // DISTRT_BENCH_INPUT_BENCH_H_
