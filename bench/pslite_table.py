#!/usr/bin/env python3
"""Ours against ps-lite, from the results of ../shared/peers/ps-lite/compare.sh.

Usage: bench/pslite_table.py RESULTS_DIR

RESULTS_DIR holds compare.sh's rounds: pslite_N.jsonl (ps-lite, plain and
heap-tuned glibc) and ours_N.json (our --only dense run of the same round).
compare.sh's own table sets ps-lite against our gRPC path only; this one
adds our TCP data plane (rpc_layer "grpc+tcp", the */data_plane rows), and
sets each against the better of ps-lite's two heaps. Cells are medians over
the rounds. Ends with a line saying which targets were met: throughput at
least 1.0x ps-lite at every size with 1 and 2 servers, and a 4 KiB round
trip no slower than ps-lite's.
"""

import glob
import json
import os
import statistics
import sys

TOOL = "pslite_table.py"
SIZES = ("1MiB", "16MiB", "64MiB")


def fail(message):
    sys.exit(f"{TOOL}: {message}")


def read_rounds(results):
    """(ps-lite values by (name, heap), ours by name): lists over rounds."""
    pslite_files = sorted(glob.glob(os.path.join(results, "pslite_*.jsonl")))
    ours_files = sorted(glob.glob(os.path.join(results, "ours_*.json")))
    if not pslite_files or not ours_files:
        fail(f"{results} has no pslite_*.jsonl and ours_*.json "
             "(run ../shared/peers/ps-lite/compare.sh first)")
    pslite = {}
    for path in pslite_files:
        with open(path) as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                    key = (r["name"], r["heap"])
                    value = float(r["value"])
                except (ValueError, KeyError, TypeError) as e:
                    fail(f"{path}:{number}: not a ps-lite figure ({e})")
                pslite.setdefault(key, []).append(value)
    ours = {}
    for path in ours_files:
        try:
            with open(path) as f:
                figures = json.load(f)
            for figure in figures:
                ours.setdefault(figure["name"], []).append(
                    float(figure["value"]))
        except (OSError, ValueError, KeyError, TypeError) as e:
            fail(f"{path}: not a //bench --json file ({e})")
    return pslite, ours


def median(values):
    return statistics.median(values) if values else None


def cell(value, fmt="%.2f"):
    return "n/a" if value is None else fmt % value


def main(argv):
    if len(argv) != 2:
        fail("usage: pslite_table.py RESULTS_DIR")
    pslite, ours = read_rounds(argv[1])
    rounds = len(glob.glob(os.path.join(argv[1], "ours_*.json")))
    print(f"{rounds} round(s); medians; GB/s = 1e9 B/s; ratio = ours over "
          "the data plane / the better of ps-lite's heaps\n")
    print("| op | ps | size | ps-lite plain | ps-lite tuned | ours, gRPC "
          "| ours, data plane | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    ratios = []
    for op in ("push", "pull"):
        for ps in (1, 2):
            for size in SIZES:
                name = f"dense/{op}/{ps}ps/{size}"
                plain = median(pslite.get((name, "plain"), []))
                tuned = median(pslite.get((name, "tuned"), []))
                grpc = median(ours.get(name + "/vs_grpc", []))
                plane = median(ours.get(name + "/data_plane/vs_grpc", []))
                best = max((v for v in (plain, tuned) if v is not None),
                           default=None)
                ratio = plane / best if plane and best else None
                ratios.append((name, ratio))
                print(f"| {op} | {ps} | {size} | {cell(plain)} | "
                      f"{cell(tuned)} | {cell(grpc)} | {cell(plane)} | "
                      f"{cell(ratio)} |")
    print("\n4 KiB round trip, p50 us (lower is better)\n")
    print("| op | ps | ps-lite plain | ps-lite tuned | ours, gRPC "
          "| ours, data plane |")
    print("|---|---|---|---|---|---|")
    slower = []
    for op in ("push", "pull"):
        for ps in (1, 2):
            name = f"dense/{op}/{ps}ps/4KiB"
            plain = median(pslite.get((name + "/p50", "plain"), []))
            tuned = median(pslite.get((name + "/p50", "tuned"), []))
            grpc = median(ours.get(name + "/p50", []))
            plane = median(ours.get(name + "/data_plane/p50", []))
            best = min((v for v in (plain, tuned) if v is not None),
                       default=None)
            if plane is None or best is None or plane > best:
                slower.append(name)
            print(f"| {op} | {ps} | {cell(plain, '%.0f')} | "
                  f"{cell(tuned, '%.0f')} | {cell(grpc, '%.0f')} | "
                  f"{cell(plane, '%.0f')} |")
    below = [n for n, r in ratios if r is None or r < 1.0]
    # A peer run that failed in some round (ps-lite aborts now and then)
    # leaves its cells medians of fewer rounds: say which.
    short = sorted(f"{name} ({heap}): {len(values)}"
                   for (name, heap), values in pslite.items()
                   if len(values) < rounds)
    short += sorted(f"{name} (ours): {len(values)}"
                    for name, values in ours.items() if len(values) < rounds)
    if short:
        print(f"\nfewer than {rounds} rounds: " + "; ".join(short))
    print()
    print("throughput over the data plane >= 1.0x ps-lite: " +
          ("met at every size" if not below else
           f"not met for {', '.join(below)}") +
          "; 4 KiB round trip no slower than ps-lite's: " +
          ("met" if not slower else f"not met for {', '.join(slower)}"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
