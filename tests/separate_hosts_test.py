"""Jobs whose tasks run on separate hosts: each task in a network namespace
of its own, with its own address and host name (tests/netns/), named by
TF_CONFIG ("ps0:2222") and talking over mutual TLS with certificates that
name those hosts (launch --secure). The main job (2 ps tasks, a chief, 2
workers) and a multi-worker mirrored job (a chief and a worker) run through
`launch`, which starts each task on its host by tests/netns/task_in_host.sh.

Needs root (namespaces); elsewhere the test says why and skips.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "netns"))
import launch_on_hosts  # noqa: E402
import netns_hosts  # noqa: E402

TARGET_ACCURACY = 0.85
JOB_TIMEOUT = 540


SKIP = netns_hosts.available()


@unittest.skipIf(SKIP, SKIP)
class SeparateHostsTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.data_dir = tempfile.mkdtemp(prefix="distrt-hosts-data-")
        launch_on_hosts.make_data(cls.data_dir)

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
        argv, env = launch_on_hosts.launch_command(
            hosts, cluster, job_dir, self.data_dir, ["--secure"],
            ["--num_cpu_replicas=2", "--log_every_secs=5", *flags])
        result = subprocess.run(argv, env=env, capture_output=True, text=True,
                                timeout=JOB_TIMEOUT)
        return result.returncode, result.stdout + result.stderr, job_dir

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
        self.assertGreaterEqual(launch_on_hosts.eval_accuracy(job_dir), TARGET_ACCURACY)
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
        self.assertGreaterEqual(launch_on_hosts.eval_accuracy(job_dir), TARGET_ACCURACY)


if __name__ == "__main__":
    unittest.main()
