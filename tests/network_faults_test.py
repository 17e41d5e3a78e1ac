"""Network faults between tasks on separate hosts, with bounded outcomes.

Every task runs on a host of its own (a network namespace, tests/netns/),
started by `launch --keep_addresses`; faults are iptables rules in the
hosts' namespaces (the kernel here has no netem). Each case asserts what
the job does and an upper bound on the time it takes to do it:

  (a) a worker cut off from a ps task for less than --ps_failure_timeout,
      then healed: the job finishes, its accuracy within 1 point of an
      undisturbed run's;
  (b) the same cut for longer: the worker fails naming the ps task it
      cannot reach, and launch ends the job with that (no restarts asked);
  (c) 5% of packets lost on every host: the job finishes, and the
      slowdown against the undisturbed run is printed;
  (d) multi-worker mirrored, the worker cut off mid-training: a task fails
      within the collective timeout, naming the one it lost;
  (e) the chief's rendezvous unreachable from the start: the worker's wait
      ends at --wait_secs, saying which tasks did not join.

Needs root (namespaces, iptables); elsewhere the test says why and skips.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "netns"))
import launch_on_hosts  # noqa: E402
import netns_hosts  # noqa: E402

JOB_TIMEOUT = 300
PS_HOSTS = ["ps0", "ps1", "chief0", "worker0"]
PS_CLUSTER = {"chief": ["chief0:2222"], "ps": ["ps0:2222", "ps1:2222"],
              "worker": ["worker0:2222"]}
MWMS_HOSTS = ["chief0", "worker0"]
MWMS_CLUSTER = {"chief": ["chief0:2222"], "worker": ["worker0:2222"]}


class Job:
    """A `launch` whose output is read as it comes, so that a test can act
    when the job reaches a point, with every wait bounded."""

    def __init__(self, argv, env):
        self.started = time.monotonic()
        self.process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True)
        self.lines = []
        self.changed = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.process.stdout:
            with self.changed:
                self.lines.append(line)
                self.changed.notify_all()

    def output(self):
        with self.changed:
            return "".join(self.lines)

    def wait_for(self, pattern, timeout, seen=0):
        """The first line from line `seen` on matching `pattern`, within
        `timeout` seconds."""
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern)
        with self.changed:
            while True:
                for line in self.lines[seen:]:
                    if regex.search(line):
                        return line
                seen = len(self.lines)
                left = deadline - time.monotonic()
                if left <= 0 or self.process.poll() is not None and \
                        not self.reader.is_alive():
                    raise AssertionError(
                        f"no line matching {pattern!r} within {timeout} s:\n"
                        + "".join(self.lines)[-5000:])
                self.changed.wait(min(left, 0.5))

    def wait_for_new(self, pattern, timeout):
        """The first line matching `pattern` that comes after this call."""
        with self.changed:
            seen = len(self.lines)
        return self.wait_for(pattern, timeout, seen)

    def finish(self, timeout):
        """(exit code, seconds since the start); the job is stopped if it
        has not ended within `timeout`."""
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.terminate()
            self.process.wait(timeout=60)
            raise AssertionError(f"the job was still running after {timeout} "
                                 f"s:\n{self.output()[-5000:]}")
        self.reader.join(timeout=10)
        return code, time.monotonic() - self.started


SKIP = netns_hosts.available()


@unittest.skipIf(SKIP, SKIP)
class NetworkFaultsTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.data_dir = tempfile.mkdtemp(prefix="distrt-faults-data-")
        launch_on_hosts.make_data(cls.data_dir)
        cls.undisturbed = None  # (accuracy, seconds) of the ps job

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.data_dir, ignore_errors=True)

    def start_hosts(self, names):
        hosts = netns_hosts.NetnsHosts(names)
        self.addCleanup(hosts.stop)
        hosts.start()
        return hosts

    def start_job(self, hosts, cluster, flags):
        job_dir = tempfile.mkdtemp(prefix="distrt-faults-job-")
        self.addCleanup(shutil.rmtree, job_dir, True)
        argv, env = launch_on_hosts.launch_command(
            hosts, cluster, job_dir, self.data_dir, ["--stop_secs=5"],
            ["--log_every_secs=1", *flags])
        job = Job(argv, env)
        self.addCleanup(lambda: job.process.poll() is None and
                        (job.process.kill(), job.process.wait(timeout=60)))
        job.dir = job_dir
        return job

    def undisturbed_run(self):
        """The ps job without faults: (accuracy, seconds), run once."""
        cls = type(self)
        if cls.undisturbed is None:
            hosts = self.start_hosts(PS_HOSTS)
            job = self.start_job(hosts, PS_CLUSTER, ["--train_steps=3000"])
            code, seconds = job.finish(JOB_TIMEOUT)
            self.assertEqual(code, 0, job.output()[-5000:])
            cls.undisturbed = (launch_on_hosts.eval_accuracy(job.dir), seconds)
            hosts.stop()
        return cls.undisturbed

    def test_a_short_partition_from_a_ps_task_heals(self):
        accuracy, _ = self.undisturbed_run()
        hosts = self.start_hosts(PS_HOSTS)
        job = self.start_job(hosts, PS_CLUSTER, [
            "--train_steps=3000", "--ps_failure_timeout=60s"])
        job.wait_for(r"\[worker:0\] training from global step", 120)
        hosts.block("worker0", "ps1")  # ps1 holds the weights
        cut = time.monotonic()
        # The partition lasts while the chief (not cut off) logs two more
        # progress lines, a second apart (--log_every_secs=1): well inside
        # the 60 s, and an event of the job rather than a sleep.
        for _ in range(2):
            job.wait_for_new(r"\[chief:0\] step \d+", 60)
        hosts.unblock("worker0", "ps1")
        code, _ = job.finish(JOB_TIMEOUT)
        self.assertEqual(code, 0, job.output()[-5000:])
        self.assertLess(time.monotonic() - cut, JOB_TIMEOUT)
        self.assertAlmostEqual(launch_on_hosts.eval_accuracy(job.dir), accuracy, delta=0.01)

    def test_b_a_long_partition_fails_the_worker_naming_the_ps_task(self):
        hosts = self.start_hosts(PS_HOSTS)
        job = self.start_job(hosts, PS_CLUSTER, [
            "--train_steps=100000", "--ps_failure_timeout=5s"])
        job.wait_for(r"\[worker:0\] training from global step", 120)
        hosts.block("worker0", "ps1")
        cut = time.monotonic()
        line = job.wait_for(r"launch: job failed", 90)
        elapsed = time.monotonic() - cut
        code, _ = job.finish(60)
        output = job.output()
        self.assertNotEqual(code, 0)
        self.assertIn("worker:0", line)
        # The worker's own error names the ps task it could not reach.
        self.assertRegex(output, r"\[worker:0\].*(ps task 1|ps1:2222)")
        # --ps_failure_timeout, plus an RPC's deadline and the launcher's
        # reaction; a hang would be minutes.
        self.assertLess(elapsed, 60, output[-5000:])

    def test_c_five_percent_packet_loss_slows_the_job_but_it_finishes(self):
        accuracy, seconds = self.undisturbed_run()
        hosts = self.start_hosts(PS_HOSTS)
        hosts.lose(0.05)
        job = self.start_job(hosts, PS_CLUSTER, ["--train_steps=3000"])
        code, lossy_seconds = job.finish(JOB_TIMEOUT)
        self.assertEqual(code, 0, job.output()[-5000:])
        self.assertAlmostEqual(launch_on_hosts.eval_accuracy(job.dir), accuracy, delta=0.01)
        print(f"\n5% packet loss on every host: {lossy_seconds:.1f} s against "
              f"{seconds:.1f} s undisturbed ({lossy_seconds / seconds:.2f}x)")

    def test_d_multi_worker_partition_is_named_within_the_timeout(self):
        hosts = self.start_hosts(MWMS_HOSTS)
        job = self.start_job(hosts, MWMS_CLUSTER, [
            "--strategy=multi_worker_mirrored", "--train_steps=1000000",
            "--collective_timeout_secs=5"])
        job.wait_for(r"\[chief:0\] step \d+", 120)
        hosts.block("chief0", "worker0")
        cut = time.monotonic()
        line = job.wait_for(r"launch: job failed", 120)
        elapsed = time.monotonic() - cut
        job.finish(60)
        output = job.output()
        # Whichever side's collective times out first names the task it
        # lost: the worker the chief, or the chief the worker.
        self.assertRegex(
            output, r"\[worker:0\].*lost contact with the chief \(chief:0 "
            r"at chief0:2222\)|\[chief:0\].*worker:0", output[-5000:])
        self.assertIn("job failed", line)
        self.assertLess(elapsed, 90, output[-5000:])

    def test_e_unreachable_rendezvous_ends_at_wait_secs(self):
        hosts = self.start_hosts(MWMS_HOSTS)
        hosts.block("chief0", "worker0")
        job = self.start_job(hosts, MWMS_CLUSTER, [
            "--strategy=multi_worker_mirrored", "--train_steps=100",
            "--wait_secs=5"])
        code, seconds = job.finish(120)
        output = job.output()
        self.assertNotEqual(code, 0)
        self.assertRegex(output, r"could not join the 2 training tasks "
                         r"\(chief:0, worker:0\) within 5s \(--wait_secs\)")
        self.assertLess(seconds, 60, output[-5000:])


if __name__ == "__main__":
    unittest.main()
