"""The main job submitted to a real Slurm cluster on this machine.

The test starts munged, slurmctld and slurmd (Debian's packages) with a
generated munge key, a temporary slurm.conf, state directories and ports
the OS chose, and one node, "localhost", at 127.0.0.1. It submits
deploy/slurm/train.sbatch with sbatch: 2 ps tasks, a chief and 2 workers as
the five tasks of one srun step, each resolving its place from Slurm's
environment without TF_CONFIG. It waits for the job with a bound, checks
the eval accuracy and the tasks' roles, and stops every daemon it started
by pid.

The daemons need root; elsewhere, or where the packages are missing, the
test says so and skips (tools/setup.sh installs them; CI runs as root).
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "netns"))
import launch_on_hosts  # noqa: E402  (clean_env)

DAEMONS = ["/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd",
           "/usr/bin/sbatch", "/usr/sbin/mungekey"]
TARGET_ACCURACY = 0.85
# The job: data generation plus 3000 steps; minutes under the sanitizers.
JOB_TIMEOUT = 540
NODE_TIMEOUT = 60
COMMAND_TIMEOUT = 30
LSAN_SUPPRESSIONS = "lsan_suppressions.txt"


def bin_dir():
    """Where ps_server/, worker/, client/ and tools/ are: the runfiles tree
    under bazel test, else bazel-bin (run by hand from the root)."""
    if os.path.exists("ps_server/ps_server"):
        return os.path.abspath(".")
    return os.path.abspath("bazel-bin")


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def free_port_run(length, attempts=20):
    """A port P the OS chose such that P..P+length-1 are all free now."""
    for _ in range(attempts):
        base = free_ports(1)[0]
        if base + length > 65535:
            continue
        sockets = []
        try:
            for port in range(base, base + length):
                s = socket.socket()
                sockets.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise AssertionError(f"no run of {length} free ports in {attempts} tries")


SLURM_CONF = """\
ClusterName=distrt-test
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={dir}/munge.socket
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.pid
SlurmdSpoolDir={dir}/spool
StateSaveLocation={dir}/state
SlurmctldLogFile={dir}/slurmctld.log
SlurmdLogFile={dir}/slurmd.log
# The node claims 8 CPUs whatever the machine has, so that five tasks fit.
SlurmdParameters=config_overrides
NodeName=localhost NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP
"""


class SlurmCluster:
    """munged, slurmctld and slurmd of one node, in a directory of their own.

    Each runs in the foreground as a child of this process, so that it is
    stopped by its own pid."""

    def __init__(self):
        # Short: the munge socket's path must fit a sockaddr_un.
        self.dir = tempfile.mkdtemp(prefix="distrt-slurm-", dir="/tmp")
        os.chmod(self.dir, 0o700)
        for sub in ("spool", "state"):
            os.mkdir(os.path.join(self.dir, sub))
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.daemons = []

    def env(self, extra=None):
        env = launch_on_hosts.clean_env({})
        env["SLURM_CONF"] = self.conf
        suppressions = os.path.join(self.dir, LSAN_SUPPRESSIONS)
        options = env.get("LSAN_OPTIONS", "")
        env["LSAN_OPTIONS"] = (options + ":" if options else "") + \
            f"suppressions={suppressions}"
        env.update(extra or {})
        return env

    def _start(self, argv, log_name):
        log = open(os.path.join(self.dir, log_name), "w")
        process = subprocess.Popen(argv, env=self.env(), stdout=log,
                                   stderr=subprocess.STDOUT)
        self.daemons.append((argv[0], process, log))
        return process

    def start(self):
        # Under --config=asan: Debian's c-ares (gRPC's DNS resolver, used
        # here because the tasks' host is the node name "localhost") leaks
        # 20 bytes at exit; that is not ours to fix.
        with open(os.path.join(self.dir, LSAN_SUPPRESSIONS), "w") as f:
            f.write("leak:libcares.so\n")
        key = os.path.join(self.dir, "munge.key")
        subprocess.run(["/usr/sbin/mungekey", "--create", f"--keyfile={key}"],
                       check=True, timeout=COMMAND_TIMEOUT,
                       capture_output=True)
        os.chmod(key, 0o400)
        ctld_port, slurmd_port = free_ports(2)
        with open(self.conf, "w") as f:
            f.write(SLURM_CONF.format(dir=self.dir, ctld_port=ctld_port,
                                      slurmd_port=slurmd_port))
        # --force: munged refuses /tmp's permissions otherwise.
        self._start(["/usr/sbin/munged", "--foreground", "--force",
                     f"--key-file={key}",
                     f"--socket={self.dir}/munge.socket",
                     f"--pid-file={self.dir}/munged.pid",
                     f"--seed-file={self.dir}/munged.seed",
                     f"--log-file={self.dir}/munged.log"], "munged.out")
        self._wait_for(lambda: os.path.exists(f"{self.dir}/munge.socket"),
                       "munged's socket")
        # -i: no state from an earlier run (the directory is new anyway).
        self._start(["/usr/sbin/slurmctld", "-D", "-i", "-f", self.conf],
                    "slurmctld.out")
        self._start(["/usr/sbin/slurmd", "-D", "-N", "localhost", "-f",
                     self.conf], "slurmd.out")
        self._wait_for(self._node_idle, "the node to be idle in sinfo")

    def _node_idle(self):
        result = subprocess.run(["sinfo", "--noheader", "--format=%t"],
                                env=self.env(), capture_output=True,
                                text=True, timeout=COMMAND_TIMEOUT)
        return result.returncode == 0 and result.stdout.strip() == "idle"

    def _wait_for(self, ready, what):
        """Polls `ready` (a real signal: a socket, sinfo) within
        NODE_TIMEOUT; between polls it waits on the newest daemon's exit,
        so that a daemon that dies ends the wait at once."""
        deadline = time.monotonic() + NODE_TIMEOUT
        while time.monotonic() < deadline:
            for name, process, _ in self.daemons:
                if process.poll() is not None:
                    raise AssertionError(
                        f"{name} exited {process.returncode} while waiting "
                        f"for {what}:\n{self.logs()}")
            if ready():
                return
            try:
                self.daemons[-1][1].wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                pass
        raise AssertionError(f"no {what} within {NODE_TIMEOUT} s:\n"
                             f"{self.logs()}")

    def logs(self):
        text = []
        for name in ("munged.log", "slurmctld.log", "slurmd.log",
                     "slurmctld.out", "slurmd.out"):
            path = os.path.join(self.dir, name)
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    lines = f.readlines()[-15:]
                text.append(f"--- {name}\n" + "".join(lines))
        return "\n".join(text)

    def stop(self):
        # The reverse of the start order: slurmd, slurmctld, munged.
        for _, process, _ in reversed(self.daemons):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for _, process, log in reversed(self.daemons):
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=20)
            log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def skip_reason():
    if os.geteuid() != 0:
        return ("Slurm's daemons need root here (slurmd starts the tasks); "
                "run the test as root")
    missing = [p for p in DAEMONS if not os.access(p, os.X_OK)]
    if missing:
        return (f"{', '.join(missing)} missing: tools/setup.sh installs "
                "munge, slurmctld, slurmd and slurm-client")
    return None


@unittest.skipIf(skip_reason(), skip_reason())
class SlurmJobTest(unittest.TestCase):

    def setUp(self):
        self.cluster = SlurmCluster()
        self.addCleanup(self.cluster.stop)
        self.cluster.start()
        self.job_dir = tempfile.mkdtemp(prefix="distrt-slurm-job-")
        self.addCleanup(shutil.rmtree, self.job_dir, True)

    def test_main_job_from_sbatch(self):
        out = os.path.join(self.job_dir, "sbatch.out")
        env = self.cluster.env({
            "DISTRT_BIN": bin_dir(),
            "JOB_DIR": self.job_dir,
            "DISTRT_SLURM_PORT_BASE": str(free_port_run(5)),
            "DISTRT_SLURM_TASK": os.path.abspath("deploy/slurm/task.sh"),
        })
        # sbatch --wait returns when the job ends, with its exit status.
        submit = subprocess.Popen(
            ["sbatch", "--wait", "--parsable", f"--output={out}",
             "deploy/slurm/train.sbatch"], env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        try:
            stdout, stderr = submit.communicate(timeout=JOB_TIMEOUT)
        except subprocess.TimeoutExpired:
            submit.kill()
            stdout, stderr = submit.communicate(timeout=COMMAND_TIMEOUT)
            subprocess.run(["scancel", "--name=distrt-main"], env=env,
                           timeout=COMMAND_TIMEOUT)
            raise AssertionError(f"the job had not ended after "
                                 f"{JOB_TIMEOUT} s:\n{self.cluster.logs()}")
        with open(out, errors="replace") as f:
            output = f.read()
        self.assertEqual(submit.returncode, 0,
                         f"sbatch --wait exited {submit.returncode}: "
                         f"{stderr}\n{output[-4000:]}")
        self.assertRegex(stdout, r"^\d+")  # the job's id
        # Five tasks, each the role Slurm's environment gave it: jobs take
        # ranks in name order (chief < ps < worker); srun --label prefixes
        # each line with the rank.
        for rank, task in ((0, "chief:0"), (3, "worker:0"), (4, "worker:1")):
            self.assertIn(f"{rank}: worker: cluster from Slurm's step: task "
                          f"{task}", output)
        for rank, index in ((1, 0), (2, 1)):
            self.assertRegex(output, rf"(?m)^{rank}: ps_server: ps task "
                             rf"{index} serving on localhost:\d+")
        with open(os.path.join(self.job_dir, "metrics.json")) as f:
            metrics = json.load(f)
        self.assertGreaterEqual(metrics["eval_accuracy"], TARGET_ACCURACY)
        self.assertIn("== eval accuracy", output)
        self.assertTrue(os.path.exists(os.path.join(
            self.job_dir, "checkpoints", "checkpoints")))

if __name__ == "__main__":
    unittest.main()
