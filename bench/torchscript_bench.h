#ifndef DISTRT_BENCH_TORCHSCRIPT_BENCH_H_
#define DISTRT_BENCH_TORCHSCRIPT_BENCH_H_

#include "absl/status/status.h"
#include "bench/bench_family.h"
#include "bench/bench_report.h"

namespace distrt::bench {

// The torchscript family (a user's PyTorch module, --model=torchscript):
// (a) examples/s of a TorchScript MLP trained by one worker with one
//     replica, against PyTorch training the same module file on the same
//     data and batch in Python (Debian's python3-torch), in the same run;
// (b) the adapter's share of a step for a module of 1M parameters: the step
//     at one example (copying the variables in and the gradients out, with
//     almost no arithmetic) against the step at 256 examples, an upper
//     bound on what the adapter adds.
absl::Status RunTorchScriptBench(const BenchConfig& config,
                                 BenchReport* report);

}  // namespace distrt::bench

#endif  // DISTRT_BENCH_TORCHSCRIPT_BENCH_H_
