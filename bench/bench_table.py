#!/usr/bin/python3
"""Prints the README's headline table from a full //bench run's --json file.

    bench/bench_table.py run.json

One Markdown row per headline (dense push and pull, the 4 KiB round trip,
the sparse family's range and how many cases reach 0.6, the CPU
all-reduce, the end_to_end jobs, time to accuracy, ps memory, TorchScript),
each figure beside the baseline measured in the same run. The file must be
a full run (not --quick, not --only): a figure it lacks is named, and the
script exits 1.
"""

import sys

from bench_json import load_figures

DENSE_SIZES = ("1MiB", "16MiB", "64MiB")
ONE_PS_JOBS = ("1w_1ps", "1w_1ps_read_ahead", "1w_1ps_tcp",
               "1w_1ps_tcp_read_ahead", "1w_1ps_tcp_push_in_background")
TWO_PS_JOBS = ("2w_2ps", "2w_2ps_read_ahead", "2w_2ps_tcp")
MEMORY_CASES = ("dense_sgd/256MiB", "dense_adam/256MiB", "hash_adagrad/1Mx64")


def load(path):
    return load_figures(path, "bench_table",
                        ("name", "value", "baseline_value", "ratio"))


class Table:
    def __init__(self, figures, path):
        self.figures = figures
        self.path = path
        self.rows = []

    def get(self, name, key):
        if name not in self.figures:
            sys.exit(f"bench_table: {self.path} has no figure {name} (a full "
                     "run, without --quick or --only, has them all)")
        return self.figures[name][key]

    def values(self, names, fmt, key="value", scale=1.0):
        return " / ".join(fmt % (self.get(n, key) / scale) for n in names)

    def row(self, *cells):
        self.rows.append("| " + " | ".join(cells) + " |")


def build(figures, path):
    t = Table(figures, path)
    for ps in ("1ps", "2ps"):
        for op in ("push", "pull"):
            grpc = [f"dense/{op}/{ps}/{s}/vs_grpc" for s in DENSE_SIZES]
            plane = [f"dense/{op}/{ps}/{s}/data_plane/vs_grpc"
                     for s in DENSE_SIZES]
            t.row(f"dense {op}, {ps[0]} ps, 1 / 16 / 64 MiB: gRPC; TCP data "
                  "plane",
                  f"{t.values(grpc, '%.2f')}; {t.values(plane, '%.2f')} GB/s",
                  f"bare gRPC {t.values(grpc, '%.2f', 'baseline_value')}",
                  f"{t.values(grpc, '%.2f', 'ratio')}; "
                  f"**{t.values(plane, '%.2f', 'ratio')}**")
    tls = [f"dense/{op}/1ps/{s}/tls/data_plane/vs_tls_grpc"
           for op in ("push", "pull") for s in ("1MiB", "16MiB")]
    t.row("dense push / pull, 1 ps, 1 / 16 MiB, with mutual TLS and the "
          "token: TCP data plane",
          f"{t.values(tls, '%.2f')} GB/s",
          f"PsClient over gRPC with TLS {t.values(tls, '%.2f', 'baseline_value')}",
          t.values(tls, "%.2f", "ratio"))
    for ps in ("1ps", "2ps"):
        grpc = [f"dense/{op}/{ps}/4KiB/p50" for op in ("push", "pull")]
        plane = [f"dense/{op}/{ps}/4KiB/data_plane/p50"
                 for op in ("push", "pull")]
        t.row(f"4 KiB push / pull p50, {ps[0]} ps: gRPC; data plane",
              f"{t.values(grpc, '%.0f')}; {t.values(plane, '%.0f')} µs",
              f"bare gRPC {t.values(grpc, '%.0f', 'baseline_value')} µs",
              f"{t.values(grpc, '%.2f', 'ratio')}; "
              f"**{t.values(plane, '%.2f', 'ratio')}** (lower is better)")
    for op in ("pull", "push"):
        for plane in (False, True):
            names = [n for n in figures
                     if n.startswith(f"sparse/{op}/")
                     and ("/10k_ids" in n or "/100k_ids" in n)
                     and n.endswith("/data_plane") == plane]
            if not names:
                t.get(f"sparse/{op}/.../10k_ids", "ratio")  # names it, exits
            ratios = [figures[n]["ratio"] for n in names]
            met = sum(1 for r in ratios if r >= 0.6)
            t.row(f"sparse {op}, dims 16 / 64, 10k / 100k ids, 1M / 10M rows, "
                  f"dense / hash, over {'the data plane' if plane else 'gRPC'}",
                  "", "same bytes over bare gRPC",
                  f"{min(ratios):.2f} – {max(ratios):.2f} (≥ 0.6: {met} of "
                  f"{len(ratios)})")
    reduce = [f"allreduce/cpu/{n}_replicas/64MiB" for n in (2, 4, 8)]
    t.row("CPU all-reduce, 64 MiB, 2 / 4 / 8 replicas (bus bandwidth)",
          f"{t.values(reduce, '%.1f')} GB/s",
          f"per-n traffic ceiling {t.values(reduce, '%.1f', 'baseline_value')}",
          t.values(reduce, "%.2f", "ratio"))
    one = [f"end_to_end/logreg/{j}" for j in ONE_PS_JOBS]
    two = [f"end_to_end/logreg/{j}" for j in TWO_PS_JOBS]
    t.row("logreg examples/s: 1 worker + 1 ps over gRPC / with `--read_ahead` "
          "/ over the data plane / data plane + `--read_ahead` / data plane + "
          "`--push_in_background`; 2 workers + 2 ps over gRPC / "
          "`--read_ahead` / data plane (best of 2)",
          f"{t.values(one, '%.0fk', scale=1e3)}; "
          f"{t.values(two, '%.0fk', scale=1e3)}",
          f"one process {t.get(one[0], 'baseline_value') / 1e3:.0f}k",
          f"{t.values(one, '%.2f', 'ratio')}; {t.values(two, '%.2f', 'ratio')}")
    step = ["end_to_end/step_overhead/1MB", "end_to_end/step_overhead/1MB_tcp"]
    t.row("per-step pull + push of a 1 MB model: gRPC; data plane",
          f"{t.values(step, '%.0f').replace(' / ', '; ')} µs",
          f"two bare gRPC calls {t.get(step[0], 'baseline_value'):.0f} µs",
          f"{t.values(step, '%.2f', 'ratio').replace(' / ', '; ')} (lower is "
          "better)")
    tta = "time_to_accuracy/logreg/2_workers"
    t.row("time to liblinear's accuracy − 0.01, 2 workers + 2 ps",
          f"{t.get(tta, 'value'):.1f} s",
          f"liblinear {t.get(tta, 'baseline_value'):.1f} s",
          f"{t.get(tta, 'ratio'):.2f} (lower is better)")
    memory = [f"ps_memory/{c}" for c in MEMORY_CASES]
    t.row("ps memory peak: 256 MiB SGD / 256 MiB Adam / 1M×64 hash Adagrad",
          f"{t.values(memory, '%.0f', scale=1e6)} MB",
          f"raw {t.values(memory, '%.0f', 'baseline_value', 1e6)} MB",
          t.values(memory, "%.2f", "ratio"))
    ts = "torchscript/mlp_128x512x10/batch256"
    t.row("TorchScript MLP 128→512→10, batch 256, one worker",
          f"{t.get(ts, 'value') / 1e3:.1f}k examples/s",
          f"PyTorch 1.13 in Python {t.get(ts, 'baseline_value') / 1e3:.1f}k",
          f"{t.get(ts, 'ratio'):.2f}")
    return t.rows


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: bench/bench_table.py RUN.json (a full //bench run's "
                 "--json file)")
    print("\n".join(build(load(argv[1]), argv[1])))


if __name__ == "__main__":
    main(sys.argv)
