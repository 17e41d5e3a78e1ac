#!/usr/bin/python3
"""Cross-worker all-reduce between processes: ours against PyTorch's, in the
same run, on the same ranks and sizes.

For each rank count, this runs gloo_allreduce_bench as that many processes
(each one rank, as workers are: rank 0 serves the rendezvous store, the
others reach it over gRPC), which times our MultiWorkerAllReduce as a
training step calls it and Gloo's own ring beside it; then
torch.distributed.all_reduce with the Gloo backend between as many
processes of this script (Debian's python3-torch; skipped, saying so, when
it cannot be imported). Both are timed alike: one checked call, warm-up,
iterations filling about --seconds_per_repetition agreed by rank 0, every
repetition starting after a barrier and ending when this rank's last call
returns, the median of --repetitions; bus bandwidth = bytes * 2(n-1)/n /
time (nccl-tests' busbw).

    bazel build //bench:gloo_allreduce_bench
    /usr/bin/python3 bench/cross_process_allreduce.py \\
        --bench_bin=bazel-bin/bench/gloo_allreduce_bench --ranks=2,3

--json writes the rows as the benches share them: {name, value, unit,
baseline, baseline_value, ratio}, ours against torch's.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

DEFAULT_SIZES = "4096,1048576,16777216,67108864"
RENDEZVOUS_TIMEOUT_S = 60


def bus_gbps(nbytes, ranks, seconds):
    return nbytes * 2.0 * (ranks - 1) / ranks / seconds / 1e9


def read_rendezvous_line(process):
    """The address rank 0 prints ("rendezvous HOST:PORT"), within
    RENDEZVOUS_TIMEOUT_S; the rest of its output is kept for the caller."""
    addresses = []
    lines = []
    seen = threading.Event()  # the address, or the end of the output

    def reader():
        for line in process.stdout:
            lines.append(line)
            if line.startswith("rendezvous ") and not addresses:
                addresses.append(line.split()[1])
                seen.set()
        seen.set()

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    seen.wait(RENDEZVOUS_TIMEOUT_S)
    return (addresses[0] if addresses else None), lines, thread


def stop_all(processes):
    for p in processes:
        if p.poll() is None:
            p.kill()
    for p in processes:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass


def wait_all(processes, what, timeout_s):
    """Waits for every process to exit 0 within timeout_s; as soon as one
    fails (or time runs out) the others are stopped and the error names
    it, rather than waiting for them to time out at a collective."""
    deadline = time.monotonic() + timeout_s
    while True:
        codes = [p.poll() for p in processes]
        for rank, code in enumerate(codes):
            if code not in (None, 0):
                stop_all(processes)
                raise RuntimeError(f"{what} rank {rank} exited with {code}")
        if all(code == 0 for code in codes):
            return
        if time.monotonic() >= deadline:
            stop_all(processes)
            raise RuntimeError(f"{what}: not done within {timeout_s} s "
                               "(--timeout_s)")
        # Blocks on one running process at a time, briefly, so that a
        # failure of any other is seen within that.
        running = next(p for p, c in zip(processes, codes) if c is None)
        try:
            running.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            pass


def bench_env():
    """The environment of gloo_allreduce_bench: under ThreadSanitizer
    (tools/tsan_test.sh) it loads Abseil built with TSan, which the test
    runner kept from this interpreter."""
    env = dict(os.environ)
    tsan_abseil = env.get("DISTRT_TSAN_ABSEIL_LIB")
    if tsan_abseil:
        env["LD_LIBRARY_PATH"] = tsan_abseil
    return env


def run_ours(args, ranks, sizes, workdir):
    """{bytes: (ours GB/s, Gloo ring GB/s)} from gloo_allreduce_bench as
    `ranks` processes."""
    out = os.path.join(workdir, f"ours_{ranks}.json")
    common = [f"--ranks={ranks}", f"--sizes={sizes}",
              f"--repetitions={args.repetitions}",
              f"--seconds_per_repetition={args.seconds_per_repetition}",
              f"--local_replicas={args.local_replicas}"]
    rank0 = subprocess.Popen(
        [args.bench_bin, "--rank=0", f"--json={out}", *common],
        stdout=subprocess.PIPE, text=True, env=bench_env())
    processes = [rank0]
    try:
        address, lines, reader = read_rendezvous_line(rank0)
        if address is None:
            raise RuntimeError(
                f"rank 0 printed no rendezvous address within "
                f"{RENDEZVOUS_TIMEOUT_S} s: {''.join(lines)[-2000:]}")
        for rank in range(1, ranks):
            processes.append(subprocess.Popen(
                [args.bench_bin, f"--rank={rank}",
                 f"--rendezvous={address}", *common], env=bench_env()))
        wait_all(processes, "gloo_allreduce_bench", args.timeout_s)
        reader.join(timeout=30)
        sys.stdout.write("".join(l for l in lines
                                 if not l.startswith("rendezvous ")))
    finally:
        stop_all(processes)
    with open(out) as f:
        entries = json.load(f)
    figures = {}
    for e in entries:
        nbytes = int(e["name"].split(" B ")[0].split()[-1])
        if e["name"].startswith("multi_worker_all_reduce"):
            figures[nbytes] = (e["value"], e["baseline_value"])
    return figures


def torch_available():
    try:
        import torch.distributed  # noqa: F401
        return torch.distributed.is_available()
    except ImportError:
        return False


def torch_rank(args):
    """One rank of PyTorch's all-reduce; rank 0 writes {bytes: seconds}."""
    import torch
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method=f"file://{args.torch_store}",
                            rank=args.torch_rank, world_size=args.torch_ranks,
                            timeout=__import__("datetime").timedelta(
                                seconds=RENDEZVOUS_TIMEOUT_S))
    rank, ranks = args.torch_rank, args.torch_ranks
    results = {}
    for nbytes in [int(s) for s in args.sizes.split(",")]:
        count = nbytes // 4
        t = torch.full((count,), float(rank + 1))
        dist.all_reduce(t)
        want = ranks * (ranks + 1) / 2
        if not bool((t == want).all()):
            raise RuntimeError(f"rank {rank}: all_reduce of {nbytes} bytes "
                               f"gave {t[:4].tolist()}..., want {want}")

        def timed(iterations):
            dist.barrier()
            start = time.perf_counter()
            for _ in range(iterations):
                dist.all_reduce(t)
            return time.perf_counter() - start

        one = timed(3) / 3
        iterations = torch.tensor(
            [min(100000, max(3, int(args.seconds_per_repetition / one)))])
        dist.broadcast(iterations, src=0)
        n = int(iterations.item())
        times = [timed(n) / n for _ in range(args.repetitions)]
        results[nbytes] = statistics.median(times)
    if rank == 0:
        with open(args.torch_json, "w") as f:
            json.dump(results, f)
    dist.destroy_process_group()


def run_torch(args, ranks, sizes, workdir):
    """{bytes: GB/s} of torch.distributed.all_reduce (Gloo) between `ranks`
    processes of this script."""
    run_dir = tempfile.mkdtemp(prefix=f"torch_{ranks}_", dir=workdir)
    store = os.path.join(run_dir, "store")
    out = os.path.join(run_dir, "figures.json")
    # Gloo on loopback, as our side: torch's otherwise resolves this host's
    # name for its address.
    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo")
    processes = [subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), f"--torch_rank={rank}",
         f"--torch_ranks={ranks}", f"--torch_store={store}",
         f"--torch_json={out}", f"--sizes={sizes}",
         f"--repetitions={args.repetitions}",
         f"--seconds_per_repetition={args.seconds_per_repetition}"],
        env=env)
        for rank in range(ranks)]
    try:
        wait_all(processes, "torch", args.timeout_s)
    finally:
        stop_all(processes)
    with open(out) as f:
        seconds = json.load(f)
    return {int(b): bus_gbps(int(b), ranks, s) for b, s in seconds.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bench_bin", default="bazel-bin/bench/"
                        "gloo_allreduce_bench")
    parser.add_argument("--ranks", default="2,3",
                        help="comma-separated process counts")
    parser.add_argument("--sizes", default=DEFAULT_SIZES,
                        help="comma-separated bytes (multiples of 4)")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--seconds_per_repetition", type=float, default=0.2)
    parser.add_argument("--local_replicas", type=int, default=1,
                        help="replicas per rank of our all-reduce")
    parser.add_argument("--json", default="")
    parser.add_argument("--timeout_s", type=float, default=600,
                        help="longest one side's processes may run")
    # One rank of the PyTorch side (this script runs itself so).
    parser.add_argument("--torch_rank", type=int, default=-1,
                        help=argparse.SUPPRESS)
    parser.add_argument("--torch_ranks", type=int, default=0,
                        help=argparse.SUPPRESS)
    parser.add_argument("--torch_store", default="", help=argparse.SUPPRESS)
    parser.add_argument("--torch_json", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.torch_rank >= 0:
        torch_rank(args)
        return 0

    if not os.access(args.bench_bin, os.X_OK):
        print(f"--bench_bin: {args.bench_bin} is not an executable "
              f"(bazel build //bench:gloo_allreduce_bench)", file=sys.stderr)
        return 2
    rank_counts = [int(r) for r in args.ranks.split(",") if r]
    if not rank_counts or min(rank_counts) < 2:
        print("--ranks: each count must be at least 2", file=sys.stderr)
        return 2
    with_torch = torch_available()
    if not with_torch:
        print("torch.distributed cannot be imported by "
              f"{sys.executable}: PyTorch's side is skipped "
              "(Debian's python3-torch, at /usr/bin/python3, has it)")
    rows = []
    with tempfile.TemporaryDirectory(prefix="cross-process-allreduce-") as w:
        for ranks in rank_counts:
            print(f"== {ranks} processes: ours (gloo_allreduce_bench "
                  f"--rank=...)", flush=True)
            ours = run_ours(args, ranks, args.sizes, w)
            torch_figures = {}
            if with_torch:
                print(f"== {ranks} processes: torch.distributed.all_reduce "
                      f"(gloo)", flush=True)
                torch_figures = run_torch(args, ranks, args.sizes, w)
            for nbytes in sorted(ours):
                rows.append((ranks, nbytes, ours[nbytes][0],
                             ours[nbytes][1], torch_figures.get(nbytes)))
    print("\nbus bandwidth, GB/s (bytes * 2(n-1)/n / time per all-reduce), "
          "median of each side's repetitions")
    print(f"{'ranks':>5} {'bytes':>10} {'ours':>10} {'gloo ring':>10} "
          f"{'torch':>10} {'ours/torch':>11}")
    entries = []
    for ranks, nbytes, ours, ring, torch_gbps in rows:
        ratio = ours / torch_gbps if torch_gbps else None
        print(f"{ranks:>5} {nbytes:>10} {ours:>10.3f} {ring:>10.3f} "
              + (f"{torch_gbps:>10.3f} {ratio:>11.2f}" if torch_gbps
                 else f"{'skipped':>10} {'':>11}"))
        if torch_gbps:
            entries.append({
                "name": f"allreduce/processes/{ranks}_ranks/{nbytes}B",
                "value": ours, "unit": "GB/s",
                "baseline": "torch_distributed_gloo",
                "baseline_value": torch_gbps, "ratio": ratio})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(entries, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
