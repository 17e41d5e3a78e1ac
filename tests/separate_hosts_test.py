"""Jobs whose tasks run on separate hosts: each task in a network namespace
of its own, with its own address and host name (tests/netns/), named by
TF_CONFIG ("ps0:2222") and talking over mutual TLS with certificates that
name those hosts (launch --secure). The main job (2 ps tasks, a chief, 2
workers) and a multi-worker mirrored job (a chief and a worker) run through
`launch`, which starts each task on its host by tests/netns/task_in_host.sh.

Needs root (namespaces); elsewhere the test says why and skips.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "netns"))
import netns_hosts  # noqa: E402

TARGET_ACCURACY = 0.85
JOB_TIMEOUT = 540
TASK_SCRIPT = os.path.abspath("tests/netns/task_in_host.sh")


def binary(path):
    return path if os.path.exists(path) else os.path.join("bazel-bin", path)


LAUNCH = binary("deploy/launch")
PS_SERVER = binary("ps_server/ps_server")
WORKER = binary("worker/worker")
GEN_DATA = binary("tools/gen_data/gen_data")


def clean_env(extra):
    env = {k: v for k, v in os.environ.items()
           if k != "TF_CONFIG" and not k.startswith("DISTRT_")
           and not k.startswith("SLURM_")}
    tsan_abseil = os.environ.get("DISTRT_TSAN_ABSEIL_LIB")
    if tsan_abseil:
        env["LD_LIBRARY_PATH"] = tsan_abseil
    env.update(extra)
    return env


SKIP = netns_hosts.available()


@unittest.skipIf(SKIP, SKIP)
class SeparateHostsTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.data_dir = tempfile.mkdtemp(prefix="distrt-hosts-data-")
        subprocess.run(
            [GEN_DATA, "--task=binary", "--rows=50000", "--features=2000",
             "--features_per_row=20", "--noise=0.05", "--eval_fraction=0.2",
             "--seed=7", f"--out_dir={cls.data_dir}", "--prefix=ctr"],
            check=True, capture_output=True, timeout=120)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.data_dir, ignore_errors=True)

    def start_hosts(self, names):
        hosts = netns_hosts.NetnsHosts(names)
        self.addCleanup(hosts.stop)
        hosts.start()
        return hosts

    def launch(self, hosts, cluster, flags):
        """Runs `launch` over `cluster` with every task on its host; returns
        (exit code, output, job dir)."""
        job_dir = tempfile.mkdtemp(prefix="distrt-hosts-job-")
        self.addCleanup(shutil.rmtree, job_dir, True)
        spec = os.path.join(job_dir, "cluster.json")
        with open(spec, "w") as f:
            json.dump(cluster, f)
        wrappers = tempfile.mkdtemp(prefix="distrt-hosts-bin-")
        self.addCleanup(shutil.rmtree, wrappers, True)
        argv = [LAUNCH, f"--cluster_spec={spec}", f"--job_dir={job_dir}",
                "--keep_addresses", "--secure",
                f"--ps_server_bin={hosts.wrapper(wrappers, PS_SERVER, TASK_SCRIPT)}",
                f"--worker_bin={hosts.wrapper(wrappers, WORKER, TASK_SCRIPT)}",
                "--",
                "--model=logreg", f"--train_data={self.data_dir}/ctr.train.svm",
                f"--eval_data={self.data_dir}/ctr.eval.svm",
                "--global_batch_size=128", "--optimizer=adagrad",
                "--learning_rate=0.1", "--num_cpu_replicas=2",
                "--log_every_secs=5", *flags]
        result = subprocess.run(
            argv, env=clean_env({"DISTRT_NETNS_PREFIX": hosts.prefix}),
            capture_output=True, text=True, timeout=JOB_TIMEOUT)
        return result.returncode, result.stdout + result.stderr, job_dir

    def accuracy(self, job_dir):
        with open(os.path.join(job_dir, "metrics.json")) as f:
            return json.load(f)["eval_accuracy"]

    def test_main_job_on_five_hosts_over_mutual_tls(self):
        hosts = self.start_hosts(["ps0", "ps1", "chief0", "worker0",
                                  "worker1"])
        cluster = {"chief": ["chief0:2222"], "ps": ["ps0:2222", "ps1:2222"],
                   "worker": ["worker0:2222", "worker1:2222"]}
        code, output, job_dir = self.launch(hosts, cluster, [
            "--train_steps=2000", "--checkpoint_every_steps=500"])
        self.assertEqual(code, 0, output[-6000:])
        # Each ps task listened on its own host, with TLS.
        for index in (0, 1):
            line = re.search(rf"\[ps:{index}\] ps_server: ps task {index} "
                             rf"serving on ps{index}:2222 .*", output)
            self.assertIsNotNone(line, output[-6000:])
            self.assertNotIn("no TLS", line.group(0))
        self.assertGreaterEqual(self.accuracy(job_dir), TARGET_ACCURACY)
        # The hosts are really apart: ps0's address is not this machine's.
        here = subprocess.run(["ip", "-o", "addr"], capture_output=True,
                              text=True, timeout=30).stdout
        self.assertNotIn(hosts.address["ps0"] + "/", here)

    def test_multi_worker_mirrored_on_two_hosts(self):
        hosts = self.start_hosts(["chief0", "worker0"])
        cluster = {"chief": ["chief0:2222"], "worker": ["worker0:2222"]}
        code, output, job_dir = self.launch(hosts, cluster, [
            "--strategy=multi_worker_mirrored", "--train_steps=600"])
        self.assertEqual(code, 0, output[-6000:])
        self.assertGreaterEqual(self.accuracy(job_dir), TARGET_ACCURACY)


if __name__ == "__main__":
    unittest.main()
