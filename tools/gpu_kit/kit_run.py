#!/usr/bin/env python3
"""The GPU kit's runner (run.sh execs it): runs every part and summarises.

Parts, in order (--only / --skip choose):
  tests      every gpu test binary, gtest XML in OUT/tests/
  gpu_check  kernel, cuBLAS and NCCL on the GPUs present
  training   real local jobs (launch: chief + worker, with 2 ps tasks and
             multi-worker mirrored) with --devices=gpu, each against the
             same job with --devices=cpu
  gpu_bench  kernels and an MLP step, GPU vs this machine's CPU
  torch      PyTorch on the same GPU: torch.matmul and an eager MLP step,
             ratios against gpu_bench's figures
  cpu_bench  bench --only dense,sparse,allreduce on this machine's cores

Without a usable GPU set-up fails, unless --allow_no_gpu: then the GPU
parts are skipped with the reason and the CPU parts run. Writes
OUT/summary.json and OUT/summary.txt; logs in OUT/logs. Exit status: 0
nothing failed, 1 a part failed or did not run in time, 2 set-up failed,
128+N stopped by signal N.
"""

import argparse
import concurrent.futures
import glob
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time
import traceback

import cuda_libraries
from kit_summary import gtest_results, read_json, tail, text_lines

PARTS = ("tests", "gpu_check", "training", "gpu_bench", "torch", "cpu_bench")

# Targets from the issue that asked for the kit (an H100 against PyTorch on
# the same GPU); below them is reported, not a failure.
TORCH_TARGETS = {"sgemm_4096": 0.8, "mlp_train_step": 0.8}

# The training jobs: dense multiclass data for the MLP, so that the GPU
# path (cuBLAS, kernels, all-reduce) does the work.
DATA_FLAGS = ["--task=multiclass", "--rows=24000", "--features=32",
              "--features_per_row=32", "--classes=4", "--noise=0.05",
              "--eval_fraction=0.2", "--seed=11", "--prefix=dense"]
JOB_FLAGS = ["--model=mlp", "--hidden_units=64,32", "--train_steps=400",
             "--global_batch_size=256", "--optimizer=adagrad",
             "--learning_rate=0.1", "--log_every_secs=5", "--seed=3"]
CLUSTERS = {
    "parameter_servers": ["--ps=2", "--workers=1", "--chief"],
    "multi_worker_mirrored": ["--workers=1", "--chief"],
}
# The CPU job must learn (else the comparison means nothing), and the GPU
# job must reach the CPU job's accuracy, within what asynchronous updates
# and summation order move it by.
CPU_ACCURACY_FLOOR = 0.80
GPU_ACCURACY_SLACK = 0.02


def log(message):
    print(message, flush=True)


class OutOfTime(Exception):
    """The run's --deadline_secs is (almost) spent."""


class Stopped(BaseException):
    """SIGTERM or SIGINT from outside; not an Exception, so that no part's
    error handling swallows it."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


class Runner:
    def __init__(self, args):
        self.kit = os.path.abspath(args.kit_dir)
        self.out = os.path.abspath(args.out)
        self.args = args
        self.started = time.monotonic()
        self.summary = {"parts": {}}
        self.child_env = None  # set by setup()
        self.gpu_reason = None  # why there is no usable GPU, if none
        self.current = None  # the child process running now, if any
        self.starting = False  # between starting a child and knowing it
        self.stop_signal = None  # a SIGTERM/SIGINT received, if any
        self.current_part = None
        with open(os.path.join(self.kit, "manifest.json")) as f:
            self.manifest = json.load(f)

    # ---- helpers -------------------------------------------------------
    def path(self, *parts):
        return os.path.join(self.kit, *parts)

    def binary(self, label):
        return self.path(self.manifest["binaries"][label])

    def time_left(self):
        return self.args.deadline_secs - (time.monotonic() - self.started)

    def bounded(self, timeout):
        """`timeout` cut to the time left; OutOfTime when little is left."""
        if self.time_left() < 5:
            raise OutOfTime()
        return min(timeout, self.time_left())

    def probe(self, argv, timeout=30, env=None):
        """A short command's CompletedProcess, or None if it cannot run."""
        try:
            return subprocess.run(argv, capture_output=True, text=True,
                                  env=env, timeout=self.bounded(timeout))
        except (OSError, subprocess.TimeoutExpired):
            return None

    def run(self, argv, log_name, timeout, cwd=None, env=None):
        """Runs argv with output to OUT/logs/log_name; returns (rc, text).

        The child runs in a process group of its own, killed when it runs
        past `timeout` (rc is None then) and when it exits (what it left
        behind, e.g. a ps task). OutOfTime when the deadline is near."""
        timeout = self.bounded(timeout)
        log_path = os.path.join(self.out, "logs", log_name)
        os.makedirs(os.path.dirname(log_path), exist_ok=True)
        with open(log_path, "w") as out:
            out.write("$ %s\n" % " ".join(argv))
            out.flush()
            # A signal while the child starts is acted on once it is known
            # (on_signal), so that it is never left behind.
            self.starting = True
            try:
                self.current = subprocess.Popen(
                    argv, stdout=out, stderr=subprocess.STDOUT,
                    cwd=cwd or self.kit,
                    env=env if env is not None else self.child_env,
                    start_new_session=True)
            finally:
                self.starting = False
            if self.stop_signal is not None:
                self.kill_group()
                raise Stopped(self.stop_signal)
            try:
                rc = self.current.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                rc = None
            self.kill_current()
            out.write("\n[exit status %s]\n" % ("timeout after %.0f s" %
                                                 timeout if rc is None else rc))
        with open(log_path, errors="replace") as f:
            return rc, f.read()

    def kill_group(self):
        """SIGKILL to the running child's process group; never waits (it
        is also called from the signal handler)."""
        if self.current is not None:
            try:
                os.killpg(self.current.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass  # the group is gone already

    def kill_current(self):
        if self.current is None:
            return
        self.kill_group()
        try:
            self.current.wait(timeout=30)
        except subprocess.TimeoutExpired:
            log("[kit] pid %d did not die within 30 s of SIGKILL (stuck in "
                "the driver?)" % self.current.pid)
        self.current = None

    def on_signal(self, signum, _):
        self.stop_signal = signum
        if self.starting:
            return  # run() raises Stopped once the child is known
        self.kill_group()
        raise Stopped(signum)

    def record(self, part, status, **details):
        entry = {"status": status}
        entry.update(details)
        self.summary["parts"][part] = entry
        reason = details.get("reason", "")
        log("[%s] %s%s" % (part, status.upper(), (": " + reason) if reason
                           else ""))

    # ---- set-up --------------------------------------------------------
    def python_candidates(self):
        if self.args.python:
            return [self.args.python]
        found = []
        for name in ("python3", "/usr/bin/python3"):
            path = shutil.which(name)
            if path and os.path.realpath(path) not in map(os.path.realpath,
                                                          found):
                found.append(path)
        return found

    def find_cuda_libraries(self):
        """{soname: path} of the chosen libraries, or exits 2 naming what
        is missing."""
        dirs = cuda_libraries.search_dirs(
            cuda_libraries.python_site_dirs(self.python_candidates(),
                                            self.bounded(30)), os.environ)
        chosen, problems = cuda_libraries.choose(
            self.manifest["cuda_libraries"], dirs,
            self.manifest["cuda_version"])
        if problems:
            self.fail_setup(
                "CUDA libraries: %s. Searched: LD_LIBRARY_PATH, the nvidia/*/"
                "lib folders of Python's site-packages, CUDA_HOME, "
                "/usr/local/cuda* and the system's (%s). Install CUDA %s's "
                "runtime, cuBLAS and NCCL, or put their folder on "
                "LD_LIBRARY_PATH." % ("; ".join(problems), ", ".join(dirs) or
                                      "none", self.manifest["cuda_version"]))
        return chosen

    def fail_setup(self, message):
        self.summary["setup"] = {"status": "failed", "reason": message}
        self.summary["exit_status"] = 2
        log("[setup] FAILED: " + message)
        self.write_summary()
        sys.exit(2)

    def check_binaries_start(self):
        """`ldd -r` of every binary under the kit's environment: no library
        missing, and no symbol either (an older NCCL or cuBLAS than the kit
        was built with lacks some). In parallel: each maps cuBLAS."""
        if shutil.which("ldd") is None:
            log("[setup] no ldd on this machine: binaries not checked before "
                "they run")
            return
        paths = [os.path.join(root, name)
                 for root, _, files in os.walk(self.path("bin"))
                 for name in sorted(files)]

        def problems_of(path):
            result = self.probe(["ldd", "-r", path], timeout=120,
                                env=self.child_env)
            if result is None:
                return ["%s: ldd -r did not finish" % path]
            return ["%s: %s" % (os.path.relpath(path, self.kit), line.strip())
                    for line in (result.stdout + result.stderr).splitlines()
                    if "not found" in line or "undefined symbol" in line]

        pool = concurrent.futures.ThreadPoolExecutor(8)
        try:
            missing = [p for found in pool.map(problems_of, paths)
                       for p in found]
        finally:
            # On a signal, the queued checks are dropped, not waited for.
            pool.shutdown(wait=False, cancel_futures=True)
        if missing:
            self.fail_setup("binaries would not start: "
                            + "; ".join(missing[:10]))

    def libraries_loaded(self):
        """{soname: path} of the CUDA libraries gpu_check really loads."""
        result = self.probe(["ldd", self.binary("//tools/gpu_check")],
                            env=self.child_env)
        loaded = {}
        for line in (result.stdout if result else "").splitlines():
            match = re.match(r"\s*(\S+) => (\S+)", line)
            if match and match.group(1) in self.manifest["cuda_libraries"]:
                loaded[match.group(1)] = os.path.realpath(match.group(2))
        return loaded

    def machine(self):
        info = {"hostname": platform.node(), "cpus": os.cpu_count(),
                "kernel": platform.release()}
        try:
            with open("/proc/cpuinfo") as f:
                model = re.search(r"model name\s*:\s*(.*)", f.read())
            info["cpu_model"] = model.group(1) if model else "unknown"
        except OSError:
            pass
        if shutil.which("nvidia-smi"):
            out = self.probe(
                ["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                 "--format=csv,noheader"])
            ok = out is not None and out.returncode == 0
            info["gpus"] = [l.strip() for l in (out.stdout if ok else
                                                "").splitlines() if l.strip()]
            if not ok:
                info["nvidia_smi"] = tail(out.stdout + out.stderr) if out \
                    else "did not answer"
        else:
            info["gpus"] = []
            info["nvidia_smi"] = "not found"
        return info

    def setup(self):
        os.makedirs(self.out, exist_ok=True)
        self.summary["kit"] = {k: self.manifest[k] for k in
                               ("commit", "made", "cuda_version")}
        self.summary["machine"] = self.machine()
        log("[setup] kit %s (commit %s, CUDA %s); machine: %d cores, GPUs: %s"
            % (self.kit, self.manifest["commit"], self.manifest["cuda_version"],
               os.cpu_count(), "; ".join(self.summary["machine"]["gpus"])
               or "none listed by nvidia-smi"))
        chosen = self.find_cuda_libraries()
        cuda_lib_dir = os.path.join(self.out, "cuda-lib")
        cuda_libraries.link_folder(chosen, cuda_lib_dir)
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = ":".join(
            [self.path("lib"), cuda_lib_dir] +
            [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d])
        # One machine: NCCL need not probe InfiniBand through the kit's
        # Debian libibverbs (pulled in by Gloo).
        env.setdefault("NCCL_IB_DISABLE", "1")
        self.child_env = env
        self.check_binaries_start()
        loaded = self.libraries_loaded()
        for soname, path in sorted(loaded.items()):
            log("[setup] %s -> %s" % (soname, path))
        self.summary["setup"] = {"status": "passed", "cuda_libraries": loaded,
                                 "ld_library_path": env["LD_LIBRARY_PATH"]}
        # gpu_check also tells whether there is a usable GPU (exit 2: none).
        rc, text = self.run([self.binary("//tools/gpu_check")],
                            "gpu_check.log", 120)
        self.gpu_check = (rc, text)
        if rc == 2:
            reason = re.search(r"no usable GPU: (.*)", text)
            self.gpu_reason = "no usable GPU: " + (
                reason.group(1).strip() if reason else "see logs/gpu_check.log")
            log("[setup] " + self.gpu_reason)
            # Skipping every GPU part would pass without testing them.
            gpus = self.summary["machine"]["gpus"]
            devices = glob.glob("/dev/nvidia[0-9]*")
            if gpus or devices:
                self.fail_setup("this machine has GPUs (%s), but CUDA finds "
                                "none usable: %s" % (
                                    "; ".join(gpus) or ", ".join(devices),
                                    self.gpu_reason))
            if not self.args.allow_no_gpu:
                self.fail_setup(self.gpu_reason + ". To run the CPU parts "
                                "alone, with the GPU ones skipped, pass "
                                "--allow_no_gpu.")

    # ---- parts ---------------------------------------------------------
    def part_tests(self):
        totals = {"passed": 0, "failed": 0, "skipped": 0}
        binaries = []
        for test in self.manifest["tests"]:
            if self.time_left() < 10:
                self.record("tests", "not run", reason=(
                    "out of time after %d of %d binaries" % (
                        len(binaries), len(self.manifest["tests"]))),
                    binaries=binaries, **totals)
                return
            name = os.path.basename(test["path"])
            xml_path = os.path.join(self.out, "tests", name + ".xml")
            os.makedirs(os.path.dirname(xml_path), exist_ok=True)
            if os.path.exists(xml_path):
                os.remove(xml_path)
            started = time.monotonic()
            rc, text = self.run(
                [self.path(test["path"])] + test["args"] +
                ["--gtest_output=xml:" + xml_path],
                os.path.join("tests", name + ".log"), 300,
                cwd=self.path("bin"))
            result = gtest_results(xml_path)
            if result["failed"] == 0 and (rc != 0 or result["cases"] == 0):
                # A crash, a timeout, or no report: never a pass.
                result["failed"] += 1
                result["failures"].append(
                    "%s exited %s%s: %s" % (
                        name, "by timeout" if rc is None else rc,
                        "" if result["cases"] else " without a gtest report",
                        tail(text)))
            if not self.gpu_reason and any(
                    r.startswith("no usable GPU") for r in
                    result["skip_reasons"]):
                # gpu_check found a GPU: a test that finds none is broken.
                result["failed"] += 1
                result["failures"].append(
                    "%s skipped for want of a GPU that gpu_check found" % name)
            result.update(label=test["label"], exit_status=rc,
                          seconds=round(time.monotonic() - started, 1))
            binaries.append(result)
            for key in totals:
                totals[key] += result[key]
            log("[tests] %s: %d passed, %d failed, %d skipped%s" % (
                name, result["passed"], result["failed"], result["skipped"],
                "".join("\n    skipped: %s" % r
                        for r in result["skip_reasons"])))
        status = "failed" if totals["failed"] else "passed"
        self.record("tests", status, reason="%d passed, %d failed, %d skipped"
                    % (totals["passed"], totals["failed"], totals["skipped"]),
                    binaries=binaries, **totals)

    def part_gpu_check(self):
        rc, text = self.gpu_check
        lines = [l for l in text.splitlines() if l.startswith("gpu_check")]
        if rc == 0:
            self.record("gpu_check", "passed", output=lines)
        elif rc == 2:
            self.record("gpu_check", "skipped", reason=self.gpu_reason,
                        output=lines)
        else:
            self.record("gpu_check", "failed", reason=tail(text),
                        output=lines)

    def training_job(self, cluster, devices, data):
        name = "%s_%s" % (cluster, devices)
        job_dir = os.path.join(self.out, "training", name)
        shutil.rmtree(job_dir, ignore_errors=True)
        device_flags = (["--devices=gpu"] if devices == "gpu" else
                        ["--devices=cpu", "--num_cpu_replicas=1"])
        started = time.monotonic()
        rc, text = self.run(
            [self.binary("//deploy:launch")] + CLUSTERS[cluster] +
            ["--job_dir=" + job_dir, "--"] + JOB_FLAGS + device_flags +
            ["--train_data=" + data + ".train.svm",
             "--eval_data=" + data + ".eval.svm"],
            os.path.join("training", name + ".log"), 240)
        job = {"exit_status": rc, "seconds": round(time.monotonic() - started,
                                                   1)}
        try:
            with open(os.path.join(job_dir, "metrics.json")) as f:
                job["eval_accuracy"] = json.load(f).get("eval_accuracy")
        except (OSError, ValueError):
            job["eval_accuracy"] = None
        if rc != 0 or job["eval_accuracy"] is None:
            job["error"] = tail(text)
        devices_line = re.search(r"devices: (.*)", text)
        if devices_line:
            job["devices"] = devices_line.group(1).strip()
        log("[training] %s: exit %s, eval accuracy %s (%.0f s)" % (
            name, rc, job["eval_accuracy"], job["seconds"]))
        return job

    def part_training(self):
        data_dir = os.path.join(self.out, "training", "data")
        rc, text = self.run([self.binary("//tools/gen_data")] + DATA_FLAGS +
                            ["--out_dir=" + data_dir],
                            os.path.join("training", "gen_data.log"), 120)
        if rc != 0:
            self.record("training", "failed", reason="gen_data: " + tail(text))
            return
        data = os.path.join(data_dir, "dense")
        jobs, problems, skipped = {}, [], []
        try:
            self.training_jobs(data, jobs, problems, skipped)
        except OutOfTime:
            self.record("training", "not run", reason=(
                "out of time after %d jobs" % len(jobs)), jobs=jobs)
            return
        if problems:
            self.record("training", "failed", reason="; ".join(problems),
                        jobs=jobs)
        elif skipped:
            self.record("training", "passed", reason=(
                "CPU jobs reached the accuracy floor; GPU jobs skipped (%s)"
                % self.gpu_reason), jobs=jobs, skipped=skipped)
        else:
            self.record("training", "passed", reason=(
                "every GPU job within %.2f of its CPU job" %
                GPU_ACCURACY_SLACK), jobs=jobs)

    def training_jobs(self, data, jobs, problems, skipped):
        """Runs each cluster's CPU and GPU job into `jobs`, noting problems
        and skipped jobs."""
        for cluster in CLUSTERS:
            cpu = self.training_job(cluster, "cpu", data)
            jobs[cluster + "_cpu"] = cpu
            if cpu["eval_accuracy"] is None:
                problems.append("%s on CPU: %s" % (cluster, cpu.get("error")))
            elif cpu["eval_accuracy"] < CPU_ACCURACY_FLOOR:
                problems.append("%s on CPU reached %.4f, under %.2f" % (
                    cluster, cpu["eval_accuracy"], CPU_ACCURACY_FLOOR))
            if self.gpu_reason:
                skipped.append(cluster + " on GPU")
                continue
            gpu = self.training_job(cluster, "gpu", data)
            jobs[cluster + "_gpu"] = gpu
            if gpu["eval_accuracy"] is None:
                problems.append("%s on GPU: %s" % (cluster, gpu.get("error")))
            elif (cpu["eval_accuracy"] is not None and gpu["eval_accuracy"] <
                  cpu["eval_accuracy"] - GPU_ACCURACY_SLACK):
                problems.append("%s on GPU reached %.4f, CPU %.4f" % (
                    cluster, gpu["eval_accuracy"], cpu["eval_accuracy"]))

    def part_gpu_bench(self):
        if self.gpu_reason:
            self.record("gpu_bench", "skipped", reason=self.gpu_reason)
            return
        json_path = os.path.join(self.out, "gpu_bench.json")
        rc, text = self.run([self.binary("//bench:gpu_bench"),
                             "--json=" + json_path], "gpu_bench.log", 360)
        figures = read_json(json_path)
        if rc != 0 or figures is None:
            self.record("gpu_bench", "failed", reason=tail(text))
            return
        self.record("gpu_bench", "passed", reason="%d figures, GPU against "
                    "this machine's CPU" % len(figures), figures=figures)

    def torch_python(self):
        """(python, description) of one with torch and a GPU, or (None, why)."""
        reasons = []
        for python in self.python_candidates():
            probe = self.probe(
                [python, "-c", "import torch; print(torch.__version__, "
                 "torch.cuda.is_available())"], timeout=120, env=os.environ)
            if probe is None:
                reasons.append("%s did not answer within 120 s" % python)
                continue
            if probe.returncode != 0:
                reasons.append("%s cannot import torch" % python)
                continue
            version, cuda = (probe.stdout.split() + ["?", "?"])[:2]
            if cuda != "True":
                reasons.append("%s has torch %s without a usable CUDA GPU" %
                               (python, version))
                continue
            return python, "%s (torch %s)" % (python, version)
        return None, "; ".join(reasons) or "no python3 found"

    def part_torch(self):
        python, described = self.torch_python()
        if python is None:
            # Asked for by --python, a PyTorch that does not work is a
            # failure; found by looking, its absence is the machine's.
            self.record("torch", "failed" if self.args.python else "skipped",
                        reason=described)
            return
        json_path = os.path.join(self.out, "torch.json")
        # PyTorch's own environment: the kit's libraries (another protobuf,
        # ...) stay out of its process.
        rc, text = self.run([python, self.path("torch_compare.py"),
                             "--json=" + json_path], "torch.log", 300,
                            env=dict(os.environ))
        measured = read_json(json_path)
        if rc != 0 or not isinstance(measured, dict):
            self.record("torch", "failed", reason=tail(text))
            return
        figures = measured.get("figures", {})
        ours = {f["name"]: f["value"] for f in
                self.summary["parts"].get("gpu_bench", {}).get("figures", [])}
        pairs = {"sgemm_4096": ("kernels/gemm/4096", "matmul/4096"),
                 "mlp_train_step": ("train_step/mlp/1gpu",
                                    "train_step/mlp/eager")}
        ratios = {}
        for key, (our_name, torch_name) in pairs.items():
            theirs = figures.get(torch_name, {}).get("value")
            if is_number(ours.get(our_name)) and is_number(theirs) and theirs:
                ratio = ours[our_name] / theirs
                ratios[key] = {"ours": ours[our_name], "torch": theirs,
                               "unit": figures[torch_name]["unit"],
                               "ratio": round(ratio, 3),
                               "target": TORCH_TARGETS[key],
                               "meets_target": ratio >= TORCH_TARGETS[key]}
        if "mlp_train_step" in ratios:
            ratios["mlp_train_step"]["note"] = (
                "ours: the runtime's whole step on one GPU (variables read "
                "in host memory and uploaded, gradients downloaded once, SGD "
                "on the host); PyTorch: eager, everything on the GPU; both "
                "from a batch in host memory")
        self.record("torch", "passed", reason=(
            "%s; %s" % (described, ", ".join(
                "%s %.2fx of PyTorch (target %.1f)" % (k, v["ratio"],
                                                       v["target"])
                for k, v in ratios.items()) or
                "no ratios: run gpu_bench in the same run")),
            python=described, settings=measured.get("settings", {}),
            torch_figures=figures, ratios=ratios)

    def part_cpu_bench(self):
        json_path = os.path.join(self.out, "cpu_bench.json")
        argv = [self.binary("//bench"), "--only=dense,sparse,allreduce",
                "--json=" + json_path]
        # The full families take about 2 minutes, and write their figures
        # only at the end: with less time left, the quick subset, run once
        # (bench repeats --quick families until they settle, up to 7 runs).
        if self.time_left() < 75:
            raise OutOfTime()  # not even the quick subset would finish
        quick = self.args.quick or self.time_left() < 240
        if quick:
            argv += ["--quick", "--runs=1"]
        rc, text = self.run(argv, "cpu_bench.log", self.time_left() - 5,
                            cwd=self.path("bin"))
        figures = read_json(json_path)
        if rc != 0 or figures is None:
            self.record("cpu_bench", "failed", reason=tail(text))
            return
        self.record("cpu_bench", "passed", reason="%d figures on %d cores%s" % (
            len(figures), os.cpu_count(), " (--quick)" if quick else ""),
            figures=figures)

    def run_part(self, name):
        """Runs one part; whatever goes wrong is recorded as its failure."""
        self.current_part = name
        try:
            getattr(self, "part_" + name)()
        except OutOfTime:
            self.kill_current()
            self.record(name, "not run", reason="out of time (--deadline_secs"
                        "=%.0f)" % self.args.deadline_secs)
        except Exception:  # a bug in the runner must not lose the summary
            self.kill_current()
            self.record(name, "failed", reason="the runner failed: " +
                        tail(traceback.format_exc(), 3))

    # ---- summary -------------------------------------------------------
    def write_summary(self):
        self.summary["seconds"] = round(time.monotonic() - self.started, 1)
        os.makedirs(self.out, exist_ok=True)
        lines = text_lines(self.summary, self.manifest, PARTS)
        # Whole files or none: a reader (or a second writer, on a signal)
        # never sees half of one.
        for name, text in (("summary.json", json.dumps(self.summary,
                                                       indent=2) + "\n"),
                           ("summary.txt", "\n".join(lines) + "\n")):
            path = os.path.join(self.out, name)
            with open(path + ".tmp", "w") as f:
                f.write(text)
            os.replace(path + ".tmp", path)
        return lines


def is_number(value):
    return isinstance(value, (int, float)) and value == value  # not NaN


def parse_parts(value):
    parts = [p for p in value.split(",") if p]
    if not parts:
        raise argparse.ArgumentTypeError("name at least one part (parts: %s)"
                                         % ",".join(PARTS))
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        raise argparse.ArgumentTypeError(
            "unknown part %s (parts: %s)" % (", ".join(unknown),
                                             ",".join(PARTS)))
    return parts


def main():
    parser = argparse.ArgumentParser(
        prog="run.sh", description="Runs the GPU kit; see docs/gpu.md.")
    parser.add_argument("--kit_dir", required=True, help=argparse.SUPPRESS)
    parser.add_argument("out", help="folder for summary.json, summary.txt, "
                        "logs/ and the tests' XML")
    parser.add_argument("--only", type=parse_parts, default=[],
                        help="comma-separated parts: " + ",".join(PARTS))
    parser.add_argument("--skip", type=parse_parts, default=[],
                        help="comma-separated parts not to run")
    parser.add_argument("--allow_no_gpu", action="store_true",
                        help="without a usable GPU, run the CPU parts and "
                        "skip the GPU ones (default: set-up fails)")
    parser.add_argument("--quick", action="store_true",
                        help="cpu_bench's one-minute subset")
    parser.add_argument("--python", default="",
                        help="the Python with PyTorch (default: python3, "
                        "then /usr/bin/python3)")
    parser.add_argument("--deadline_secs", type=float, default=540,
                        help="parts not started by then are reported as not "
                        "run (default 540: inside a 10-minute limit)")
    args = parser.parse_args()

    runner = Runner(args)
    signal.signal(signal.SIGTERM, runner.on_signal)
    signal.signal(signal.SIGINT, runner.on_signal)
    try:
        try:
            runner.setup()
        except OutOfTime:
            runner.fail_setup("out of time during set-up")
        except Exception:  # a bug in the runner must not lose the summary
            runner.fail_setup("the runner failed: " +
                              tail(traceback.format_exc(), 3))
        selected = [p for p in PARTS if (not args.only or p in args.only)
                    and p not in args.skip]
        for name in selected:
            runner.run_part(name)
    except Stopped as stopped:
        # Killed from outside (a command's time limit): no child is left
        # behind, and what ran so far is summarised.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        runner.kill_current()
        runner.summary["stopped_by_signal"] = stopped.signum
        if runner.current_part:
            runner.record(runner.current_part, "not run", reason=(
                "stopped by signal %d" % stopped.signum))
        runner.summary["exit_status"] = 128 + stopped.signum
        runner.write_summary()
        return 128 + stopped.signum
    failed = [n for n, p in runner.summary["parts"].items()
              if p["status"] in ("failed", "not run")]
    runner.summary["exit_status"] = 1 if failed else 0
    lines = runner.write_summary()
    log("\n".join(["", "== summary (%s)" % os.path.join(runner.out,
                                                          "summary.txt")] +
                   lines))
    if failed:
        log("== FAILED: " + ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
