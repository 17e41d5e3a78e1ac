#ifndef DISTRT_BENCH_REPEATED_RUNS_H_
#define DISTRT_BENCH_REPEATED_RUNS_H_

// A family's figures over repeated runs: the median of each, and whether
// the runs agree well enough to stop repeating.
//
// One run of a family on a shared 2-core VM can be off by ±20-30% (the
// machine's memory bandwidth and CPU share move under it), so one run's
// figure is a poor key for comparisons across runs. //bench repeats a
// family until its figures settle and reports each one's median run.
//
// Figures are matched across runs by name; a figure missing from some runs
// (a case that skipped) is the median of the runs that have it.

#include <vector>

#include "bench/bench_report.h"

namespace distrt::bench {

// A figure has settled when more than half of its runs lie within this
// fraction of their median ratio: the median is then the centre of a
// majority that agrees, and two such medians should differ by less than
// twice this (the ±15% that issue 25 asks of --quick rows).
inline constexpr double kSettledWithin = 0.075;

// For each figure name, in the order of first appearance: the run whose
// ratio is the median (the lower middle one for an even count), with
// `runs`, `ratio_min` and `ratio_max` set over all runs of that name.
// Where a figure has no baseline (ratio 0) its value orders the runs.
std::vector<BenchFigure> MedianFigures(
    const std::vector<std::vector<BenchFigure>>& runs);

// Whether every figure of `runs` has settled (see kSettledWithin). True for
// no runs' figures at all; false for a figure seen in fewer than
// `min_runs` runs.
bool FiguresSettled(const std::vector<std::vector<BenchFigure>>& runs,
                    int min_runs);

}  // namespace distrt::bench

#endif  // DISTRT_BENCH_REPEATED_RUNS_H_
