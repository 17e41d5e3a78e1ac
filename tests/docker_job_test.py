"""The image built for real and the main job run in it: every task in a
container of its own on a docker network, with the commands and flags of
deploy/kubernetes/tfjob.yaml and the TF_CONFIG that Kubeflow's TFJob
operator writes for them.

The test starts its own dockerd inside a network namespace that it makes,
so the daemon's bridge and the containers' addresses exist only there, and
stops it (by pid) and removes the namespace at the end. The image comes
from deploy/docker/build_image.sh: a base made by debootstrap from Debian's
archive (kept in /var/cache/distrt-docker between runs), `docker import`,
then `docker build` with this build's binaries.

Needs root, docker.io and debootstrap (tools/setup.sh). Without them, or
when the binaries are a sanitizer build (the image has no sanitizer
runtime; the README's test command runs the plain build), it says why and
skips.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import yaml

from tfjob_operator import operator_tf_config

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "netns"))
import launch_on_hosts  # noqa: E402

TFJOB = "deploy/kubernetes/tfjob.yaml"
BUILD_IMAGE = "deploy/docker/build_image.sh"
PROGRAMS = {
    "ps_server": "ps_server/ps_server",
    "worker": "worker/worker",
    "distctl": "client/distctl",
    "gen_data": "tools/gen_data/gen_data",
    "libdistrt_torchscript.so": "runtime/torchscript/libdistrt_torchscript.so",
}
IMAGE = "distrt:docker-job-test"
BASE_CACHE = "/var/cache/distrt-docker"
TARGET_ACCURACY = 0.85
COMMAND_TIMEOUT = 60
BUILD_TIMEOUT = 900  # debootstrap's downloads on a cold cache
JOB_TIMEOUT = 600
# As Kubeflow's TFJob operator names a replica's Service.
NAMESPACE = "default"


def skip_reason():
    if os.geteuid() != 0:
        return "dockerd and debootstrap need root"
    for tool in ("dockerd", "docker", "debootstrap", "ip", "nsenter"):
        if shutil.which(tool) is None and not os.access(f"/usr/sbin/{tool}",
                                                        os.X_OK):
            return f"{tool} is missing (tools/setup.sh installs it)"
    libraries = subprocess.run(
        ["ldd", launch_on_hosts.binary(PROGRAMS["worker"])],
        capture_output=True, text=True, timeout=COMMAND_TIMEOUT).stdout
    for runtime in ("libasan", "libtsan", "libubsan"):
        if runtime in libraries:
            return (f"the binaries are a sanitizer build ({runtime}); the "
                    "image carries the plain build's")
    return None


class Dockerd:
    """A docker daemon of the test's own, in a network namespace of its
    own, with its state in a temporary directory."""

    def __init__(self):
        self.root = tempfile.mkdtemp(prefix="distrt-dockerd-")
        self.namespace = f"distrt-docker-{os.getpid()}"
        self.socket = os.path.join(self.root, "docker.sock")
        self.env = dict(os.environ, DOCKER_HOST=f"unix://{self.socket}")
        self.process = None

    def start(self):
        subprocess.run(["ip", "netns", "add", self.namespace], check=True,
                       timeout=COMMAND_TIMEOUT)
        subprocess.run(["ip", "netns", "exec", self.namespace, "ip", "link",
                        "set", "lo", "up"], check=True,
                       timeout=COMMAND_TIMEOUT)
        self.log = open(os.path.join(self.root, "dockerd.log"), "w")
        # No default bridge and no iptables rules: the containers talk over
        # the network the test creates, inside the namespace. nsenter, not
        # `ip netns exec`, which remounts /sys and so hides the cgroup
        # hierarchies that dockerd needs.
        self.process = subprocess.Popen(
            ["nsenter", f"--net=/run/netns/{self.namespace}", "dockerd",
             f"--data-root={self.root}/data", f"--exec-root={self.root}/exec",
             f"--pidfile={self.root}/dockerd.pid", f"--host=unix://{self.socket}",
             "--bridge=none", "--iptables=false", "--ip-masq=false"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + COMMAND_TIMEOUT
        while self.docker("info", check=False).returncode != 0:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(
                    "dockerd did not start:\n" + self.daemon_log())
            # Wait on the daemon's exit for a moment (a bounded poll of
            # `docker info`, which answers once dockerd has initialised).
            try:
                self.process.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                pass

    def daemon_log(self):
        with open(os.path.join(self.root, "dockerd.log")) as f:
            return f.read()[-5000:]

    def docker(self, *argv, check=True, timeout=COMMAND_TIMEOUT):
        result = subprocess.run(["docker", *argv], env=self.env,
                                capture_output=True, text=True,
                                timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError(f"docker {' '.join(argv)} exited "
                                 f"{result.returncode}: {result.stderr}")
        return result

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=COMMAND_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=COMMAND_TIMEOUT)
        if self.process is not None:
            self.log.close()
        subprocess.run(["ip", "netns", "del", self.namespace],
                       capture_output=True, timeout=COMMAND_TIMEOUT)
        shutil.rmtree(self.root, ignore_errors=True)


def load_tfjob():
    with open(TFJOB) as f:
        return next(d for d in yaml.safe_load_all(f) if d["kind"] == "TFJob")


def tfjob_tasks(tfjob):
    """(replica type, index, command, args) of every pod of the TFJob."""
    tasks = []
    for kind, spec in tfjob["spec"]["tfReplicaSpecs"].items():
        container = spec["template"]["spec"]["containers"][0]
        for index in range(spec.get("replicas", 1)):
            tasks.append((kind, index, container["command"],
                          container["args"]))
    return tasks


SKIP = skip_reason()


@unittest.skipIf(SKIP, SKIP)
class DockerJobTest(unittest.TestCase):

    def setUp(self):
        self.daemon = Dockerd()
        self.addCleanup(self.daemon.stop)
        self.daemon.start()

    def build_image(self):
        binaries = tempfile.mkdtemp(prefix="distrt-image-bin-")
        self.addCleanup(shutil.rmtree, binaries, True)
        for name, path in PROGRAMS.items():
            shutil.copy(launch_on_hosts.binary(path),
                        os.path.join(binaries, name))
        started = time.monotonic()
        result = subprocess.run(
            ["bash", BUILD_IMAGE, IMAGE],
            env=dict(self.daemon.env, DISTRT_IMAGE_BINARIES=binaries,
                     DISTRT_DOCKER_CACHE=BASE_CACHE),
            capture_output=True, text=True, timeout=BUILD_TIMEOUT)
        self.assertEqual(result.returncode, 0,
                         result.stdout + result.stderr[-5000:])
        print(f"\nthe image, built in {time.monotonic() - started:.0f} s:\n"
              + result.stdout, flush=True)

    def test_main_job_with_every_task_in_its_own_container(self):
        self.build_image()
        data_dir = tempfile.mkdtemp(prefix="distrt-docker-data-")
        job_dir = tempfile.mkdtemp(prefix="distrt-docker-job-")
        for directory in (data_dir, job_dir):
            self.addCleanup(shutil.rmtree, directory, True)
        launch_on_hosts.make_data(data_dir)
        os.chmod(data_dir, 0o755)
        for entry in os.listdir(data_dir):
            os.chmod(os.path.join(data_dir, entry), 0o644)
        os.chown(job_dir, 10001, 10001)  # the image's user

        tfjob = load_tfjob()
        name = tfjob["metadata"]["name"]
        network = f"{name}-net"
        self.daemon.docker("network", "create", network)
        containers = []
        self.addCleanup(lambda: containers and self.daemon.docker(
            "rm", "-f", *containers, check=False))
        for kind, index, command, args in tfjob_tasks(tfjob):
            container = f"{name}-{kind.lower()}-{index}"
            tf_config = operator_tf_config(tfjob, kind, index, NAMESPACE)
            self.daemon.docker(
                "run", "--detach", f"--name={container}",
                f"--hostname={container}", f"--network={network}",
                f"--network-alias={container}.{NAMESPACE}.svc",
                f"--env=TF_CONFIG={tf_config}",
                f"--volume={data_dir}:/data:ro", f"--volume={job_dir}:/job",
                IMAGE, *command, *args)
            containers.append(container)
        # 2 ps tasks, the chief, 2 workers and the evaluator.
        self.assertEqual(len(containers), 6)

        started = time.monotonic()
        codes = {}
        for container in containers:
            left = max(1, JOB_TIMEOUT - (time.monotonic() - started))
            codes[container] = int(self.daemon.docker(
                "wait", container, timeout=left).stdout.strip())
        seconds = time.monotonic() - started
        logs = {}
        for container in containers:
            printed = self.daemon.docker("logs", container)
            logs[container] = printed.stdout + printed.stderr
        everything = "".join(f"--- {c} (exit {codes[c]})\n{logs[c][-3000:]}"
                             for c in containers)
        self.assertEqual(set(codes.values()), {0}, everything)
        # Each ps task listened on every interface of its container, as
        # the manifest asks (--bind_host=0.0.0.0), as the address TF_CONFIG
        # names.
        self.assertIn(f"cluster address {name}-ps-1.{NAMESPACE}.svc:2222",
                      logs[f"{name}-ps-1"], everything)
        # The evaluator evaluated the chief's final checkpoint, then ended.
        self.assertIn("evaluated the final checkpoint",
                      logs[f"{name}-evaluator-0"], everything)
        with open(os.path.join(job_dir, "metrics.json")) as f:
            accuracy = json.load(f)["eval_accuracy"]
        self.assertGreaterEqual(accuracy, TARGET_ACCURACY, everything)
        self.assertTrue(os.path.exists(
            os.path.join(job_dir, "checkpoints", "final_checkpoint")))
        print(f"the main job in {len(containers)} containers: accuracy "
              f"{accuracy:.4f}, {seconds:.0f} s")


if __name__ == "__main__":
    unittest.main()
