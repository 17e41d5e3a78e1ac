#!/usr/bin/python3
"""Compares the figures of two or more //bench runs written with --json.

    bench/compare_runs.py first.json second.json [more.json ...]

For each figure name present in every file, prints its ratio in each run
and how far the runs spread: (highest - lowest) / 2 over their mean, as a
percentage, so "±12%" means every run lies within 12% of the centre of the
range. Ends with how many figures spread by more than --within (default
15%, the stability issue 25 asks of --quick rows) and exits 1 if any do.
"""

import argparse
import sys

from bench_json import load_figures


def load(path):
    return load_figures(path, "compare_runs")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="--json files of //bench")
    parser.add_argument("--within", type=float, default=15.0,
                        help="largest spread, in percent, that passes")
    args = parser.parse_args()
    if len(args.runs) < 2:
        parser.error("give at least two runs to compare")
    runs = [load(path) for path in args.runs]
    names = [name for name in runs[0] if all(name in run for run in runs)]
    spread_out = []
    print(f"{'figure':<48} " + " ".join(f"{'run ' + str(i + 1):>8}"
                                        for i in range(len(runs))) + "   spread")
    for name in names:
        ratios = [run[name]["ratio"] for run in runs]
        centre = (max(ratios) + min(ratios)) / 2
        spread = 100 * (max(ratios) - min(ratios)) / 2 / centre if centre else 0
        mark = "  <-" if spread > args.within else ""
        if mark:
            spread_out.append(name)
        print(f"{name:<48} " + " ".join(f"{r:8.3f}" for r in ratios)
              + f"   ±{spread:.0f}%{mark}")
    skipped = sum(1 for run in runs for name in run if name not in names)
    print(f"{len(names) - len(spread_out)} of {len(names)} figures within "
          f"±{args.within:g}%" + (f"; {skipped} figures not in every run"
                                  if skipped else ""))
    return 1 if spread_out else 0


if __name__ == "__main__":
    sys.exit(main())
