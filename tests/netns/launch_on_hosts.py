"""What the tests that run jobs on separate hosts share: the binaries, a
clean environment for them, the data, and `launch`'s command line that
starts every task on its host (task_in_host.sh) at its cluster-spec
address (--keep_addresses)."""

import json
import os
import subprocess

TASK_SCRIPT = os.path.abspath("tests/netns/task_in_host.sh")


def binary(path):
    """A binary from the runfiles tree, or bazel-bin/ (run by hand)."""
    return path if os.path.exists(path) else os.path.join("bazel-bin", path)


LAUNCH = binary("deploy/launch")
PS_SERVER = binary("ps_server/ps_server")
WORKER = binary("worker/worker")
GEN_DATA = binary("tools/gen_data/gen_data")


def clean_env(extra):
    """This process's environment without what would place a task
    elsewhere (TF_CONFIG, SLURM_*) or DISTRT_*, plus `extra`. Under
    ThreadSanitizer our programs need Abseil built with it, which
    run_python_test.sh kept from the interpreter."""
    env = {k: v for k, v in os.environ.items()
           if k != "TF_CONFIG" and not k.startswith("DISTRT_")
           and not k.startswith("SLURM_")}
    tsan_abseil = os.environ.get("DISTRT_TSAN_ABSEIL_LIB")
    if tsan_abseil:
        env["LD_LIBRARY_PATH"] = tsan_abseil
    env.update(extra)
    return env


def make_data(out_dir):
    """The main job's data, smaller: ctr.train.svm and ctr.eval.svm."""
    subprocess.run(
        [GEN_DATA, "--task=binary", "--rows=50000", "--features=2000",
         "--features_per_row=20", "--noise=0.05", "--eval_fraction=0.2",
         "--seed=7", f"--out_dir={out_dir}", "--prefix=ctr"],
        check=True, capture_output=True, timeout=120)


def launch_command(hosts, cluster, job_dir, data_dir, launch_flags,
                   training_flags, ps_flags=()):
    """(argv, env) of `launch` running `cluster` (a dict of jobs) with each
    task on its host of `hosts` (a started NetnsHosts), logreg on the data
    in `data_dir`; ps_server gets `ps_flags` last. The cluster spec and the
    wrappers go into job_dir."""
    spec = os.path.join(job_dir, "cluster.json")
    with open(spec, "w") as f:
        json.dump(cluster, f)
    argv = [LAUNCH, f"--cluster_spec={spec}",
            f"--job_dir={os.path.join(job_dir, 'job')}", "--keep_addresses",
            "--ps_server_bin="
            + hosts.wrapper(job_dir, PS_SERVER, TASK_SCRIPT, ps_flags),
            f"--worker_bin={hosts.wrapper(job_dir, WORKER, TASK_SCRIPT)}",
            *launch_flags, "--",
            "--model=logreg", f"--train_data={data_dir}/ctr.train.svm",
            f"--eval_data={data_dir}/ctr.eval.svm",
            "--global_batch_size=128", "--optimizer=adagrad",
            "--learning_rate=0.1", *training_flags]
    return argv, clean_env({"DISTRT_NETNS_PREFIX": hosts.prefix})


def final_metrics(job_dir):
    """The chief's metrics.json of a job that launch_command ran."""
    with open(os.path.join(job_dir, "job", "metrics.json")) as f:
        return json.load(f)


def eval_accuracy(job_dir):
    return final_metrics(job_dir)["eval_accuracy"]


def steps_per_sec(job_dir):
    metrics = final_metrics(job_dir)
    return metrics["global_step"] / metrics["wall_secs"]
