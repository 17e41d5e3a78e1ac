"""The Kubernetes manifests and the image recipe of deploy/, checked against
the binaries they run.

- tfjob.yaml: for every pod, the TF_CONFIG that Kubeflow's training operator
  would write (its rules are re-implemented below, with their sources) goes
  through `distctl resolve`, which must give the role the manifest intends;
  the pods follow the operator's conventions (container "tensorflow", port
  "tfjob-port") and pass only flags their binary has. Then the whole job
  runs on this machine, every pod a process with its TF_CONFIG and flags.
- statefulset.yaml: for every pod, tf_config_from_ordinal.sh run with the
  environment the manifest gives it must yield the intended role and the
  headless Services' DNS names; Services and StatefulSets must agree.
- tf_config_from_ordinal.sh: refuses bad input with a message, runs the
  program with TF_CONFIG, passes signals on, idles after success on request.
- shared_data.yaml: the data the trainers read is the data the Job writes,
  and the ps tasks see the chief's checkpoint directory.
- deploy/docker/Dockerfile: builds and copies every program the manifests
  run, and installs the Debian packages of every shared library they link.

Run by Bazel (//tests:deploy_manifests_test) from the runfiles root. By hand,
from the repository root after `bazel build //client:distctl //worker
//ps_server //tools/gen_data`:
  /usr/bin/python3 tests/deploy_manifests_test.py
(binaries default to bazel-bin/...; DISTCTL, WORKER, PS_SERVER and GEN_DATA
override their paths).
"""

import functools
import itertools
import json
import os
import posixpath
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import yaml

from tfjob_operator import (OPERATOR_CONTAINER, OPERATOR_PORT_NAME,
                            OPERATOR_REPLICA_TYPES, operator_tf_config)

TIMEOUT = 30
K8S = "deploy/kubernetes"
TFJOB_YAML = f"{K8S}/tfjob.yaml"
STATEFULSET_YAML = f"{K8S}/statefulset.yaml"
SHARED_DATA_YAML = f"{K8S}/shared_data.yaml"
ENTRYPOINT = f"{K8S}/tf_config_from_ordinal.sh"
ENTRYPOINT_NAME = "tf_config_from_ordinal.sh"
DOCKERFILE = "deploy/docker/Dockerfile"


def binary(env_var, runfiles_path):
    """A binary from $env_var, the runfiles tree, or bazel-bin/ (by hand)."""
    if os.environ.get(env_var):
        return os.environ[env_var]
    if os.path.exists(runfiles_path):
        return runfiles_path
    return os.path.join("bazel-bin", runfiles_path)


DISTCTL = binary("DISTCTL", "client/distctl")
# The worker's TorchScript plugin (a data dependency of //worker).
PLUGIN = binary("TORCHSCRIPT_PLUGIN",
                "runtime/torchscript/libdistrt_torchscript.so")
# The programs the manifests run, by the name they have in the image.
PROGRAMS = {
    "worker": binary("WORKER", "worker/worker"),
    "ps_server": binary("PS_SERVER", "ps_server/ps_server"),
    "gen_data": binary("GEN_DATA", "tools/gen_data/gen_data"),
    "distctl": DISTCTL,
}


def load_documents(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def by_kind(documents, kind):
    return {d["metadata"]["name"]: d for d in documents if d["kind"] == kind}


def run(argv, env=None, check_ok=True):
    result = subprocess.run(argv, env=env, capture_output=True, text=True,
                            timeout=TIMEOUT)
    if check_ok and result.returncode != 0:
        raise AssertionError(f"{argv} exited {result.returncode}: "
                             f"{result.stderr.strip()}")
    return result


def clean_env(extra):
    """This process's environment without TF_CONFIG or DISTRT_*, plus extra.

    Under ThreadSanitizer (tools/tsan_test.sh) our programs load Abseil
    built with TSan, which run_python_test.sh kept from the interpreter."""
    env = {k: v for k, v in os.environ.items()
           if k != "TF_CONFIG" and not k.startswith("DISTRT_")}
    tsan_abseil = os.environ.get("DISTRT_TSAN_ABSEIL_LIB")
    if tsan_abseil:
        env["LD_LIBRARY_PATH"] = tsan_abseil
    env.update(extra)
    return env


def distctl_resolve(tf_config):
    result = run([DISTCTL, "resolve"], env=clean_env({"TF_CONFIG": tf_config}))
    return json.loads(result.stdout)


@functools.lru_cache(maxsize=None)
def flags_of(program):
    """The flag names the program defines, from its --helpfull."""
    result = run([PROGRAMS[program], "--helpfull"], check_ok=False)
    names = set(re.findall(r"^\s+--([A-Za-z0-9_]+) \(",
                           result.stdout + result.stderr, re.MULTILINE))
    if not names:
        raise AssertionError(f"{program} --helpfull listed no flags")
    return frozenset(names)


def expected_role(cluster_counts, task_type, index):
    """What docs/tf_config.md says a task resolves to (dense cluster)."""
    chiefs = cluster_counts.get("chief", 0)
    workers = cluster_counts.get("worker", 0)
    if task_type == "ps":
        return {"is_chief": False, "num_workers": None, "id_in_cluster": None}
    if task_type == "evaluator":
        return {"is_chief": True, "num_workers": 1, "id_in_cluster": 0}
    if task_type == "chief":
        return {"is_chief": True, "num_workers": chiefs + workers,
                "id_in_cluster": 0}
    return {"is_chief": chiefs == 0 and index == 0,
            "num_workers": chiefs + workers, "id_in_cluster": chiefs + index}


class Pod:
    """One pod template: the parts of it these checks look at."""

    def __init__(self, pod_spec, container):
        self.spec = pod_spec
        self.container = container
        self.volumes = {v["name"]: v for v in pod_spec.get("volumes", [])}

    def argv(self):
        return list(self.container.get("command", [])) + list(
            self.container.get("args", []))

    def program_and_args(self):
        """The program the pod runs and its arguments, past the entrypoint."""
        argv = self.argv()
        if argv and argv[0] == ENTRYPOINT_NAME:
            argv = argv[1:]
        return argv[0], argv[1:]

    def resolve(self, path):
        """Where a path inside the container lives: ("pvc", claim, path in
        the claim) or ("configMap", name, key)."""
        mounts = sorted(self.container.get("volumeMounts", []),
                        key=lambda m: len(m["mountPath"]), reverse=True)
        for mount in mounts:
            root = mount["mountPath"].rstrip("/")
            if path == root or path.startswith(root + "/"):
                rest = path[len(root):].lstrip("/")
                volume = self.volumes[mount["name"]]
                if "persistentVolumeClaim" in volume:
                    inside = posixpath.join(mount.get("subPath", ""), rest)
                    claim = volume["persistentVolumeClaim"]["claimName"]
                    return ("pvc", claim, posixpath.normpath(inside))
                if "configMap" in volume:
                    return ("configMap", volume["configMap"]["name"], rest)
                raise AssertionError(f"volume {mount['name']} is neither a "
                                     "claim nor a ConfigMap")
        raise AssertionError(f"{path} is on no volume of the pod")


def flag_values(args):
    """{flag: value} of --flag=value arguments."""
    values = {}
    for arg in args:
        if arg.startswith("--") and "=" in arg:
            name, value = arg[2:].split("=", 1)
            values[name] = value
    return values


class ManifestChecks(unittest.TestCase):
    """Checks that both variants share: flags, data and checkpoints."""

    config_maps = {}

    def full_args(self, pod):
        """The program's arguments with --flagfile contents expanded."""
        program, args = pod.program_and_args()
        expanded = []
        for arg in args:
            if arg.startswith("--flagfile="):
                kind, name, key = pod.resolve(arg.split("=", 1)[1])
                self.assertEqual(kind, "configMap", arg)
                self.assertIn(name, self.config_maps, f"{arg}: no ConfigMap")
                lines = [line.strip() for line in
                         self.config_maps[name]["data"][key].splitlines()]
                expanded += [line for line in lines
                             if line and not line.startswith("#")]
            else:
                expanded.append(arg)
        return program, expanded

    def check_flags(self, where, pod):
        program, args = self.full_args(pod)
        self.assertIn(program, PROGRAMS, f"{where}: unknown program")
        known = flags_of(program)
        for arg in args:
            self.assertTrue(arg.startswith("--"),
                            f"{where}: {program} takes no positional "
                            f"argument, got {arg!r}")
            name = arg[2:].split("=", 1)[0]
            self.assertTrue(
                name in known or (name.startswith("no") and name[2:] in known),
                f"{where}: {program} has no flag --{name}")

    def check_storage(self, trainers, ps_pods, gen_data_pod):
        """The trainers read what the data Job writes; every ps task and the
        evaluator see the chief's checkpoint directory as the chief does."""
        _, gen_args = self.full_args(gen_data_pod)
        gen = flag_values(gen_args)
        written = {gen_data_pod.resolve(posixpath.join(
            gen["out_dir"], f"{gen['prefix']}.{part}.svm"))
            for part in ("train", "eval")}
        checkpoint_dirs = {}
        for where, pod in trainers.items():
            _, args = self.full_args(pod)
            flags = flag_values(args)
            for data_flag in ("train_data", "eval_data"):
                self.assertIn(pod.resolve(flags[data_flag]), written,
                              f"{where}: --{data_flag} is not what "
                              "distrt-gen-data writes")
            checkpoint_dirs[where] = (flags["checkpoint_dir"],
                                      pod.resolve(flags["checkpoint_dir"]))
        self.assertEqual(len(set(checkpoint_dirs.values())), 1,
                         f"trainers disagree on --checkpoint_dir: "
                         f"{checkpoint_dirs}")
        path, location = next(iter(checkpoint_dirs.values()))
        self.assertEqual(location[0], "pvc")
        for where, pod in ps_pods.items():
            self.assertEqual(pod.resolve(path), location,
                             f"{where} does not see {path} as the chief does")


def shared_data():
    documents = load_documents(SHARED_DATA_YAML)
    claims = by_kind(documents, "PersistentVolumeClaim")
    job = by_kind(documents, "Job")["distrt-gen-data"]
    pod_spec = job["spec"]["template"]["spec"]
    return claims, Pod(pod_spec, pod_spec["containers"][0])


class TfJobTest(ManifestChecks):

    @classmethod
    def setUpClass(cls):
        documents = load_documents(TFJOB_YAML)
        cls.tfjob = by_kind(documents, "TFJob")["distrt-logreg"]
        cls.config_maps = by_kind(documents, "ConfigMap")
        cls.specs = cls.tfjob["spec"]["tfReplicaSpecs"]

    def pods(self):
        """{(replica type, index): Pod} for every pod the operator makes."""
        pods = {}
        for rtype, spec in self.specs.items():
            pod_spec = spec["template"]["spec"]
            containers = {c["name"]: c for c in pod_spec["containers"]}
            self.assertIn(OPERATOR_CONTAINER, containers, rtype)
            for i in range(spec["replicas"]):
                pods[(rtype, i)] = Pod(pod_spec,
                                       containers[OPERATOR_CONTAINER])
        return pods

    def test_is_the_documented_job(self):
        self.assertEqual(self.tfjob["apiVersion"], "kubeflow.org/v1")
        # 1 chief, 2 ps, 2 workers, 1 evaluator, as docs/kubernetes.md says.
        self.assertEqual({t: s["replicas"] for t, s in self.specs.items()},
                         {"Chief": 1, "PS": 2, "Worker": 2, "Evaluator": 1})
        self.assertLessEqual(set(self.specs), OPERATOR_REPLICA_TYPES)
        # "Master" would become a "master" job, which TF_CONFIG here refuses.
        self.assertNotIn("Master", self.specs)
        self.assertFalse(self.tfjob["spec"].get("enableDynamicWorker", False),
                         "enableDynamicWorker makes the operator write "
                         "\"sparseCluster\", which the runtime does not read")

    def test_replicas_follow_the_operators_conventions(self):
        for rtype, spec in self.specs.items():
            self.assertEqual(spec["restartPolicy"], "OnFailure", rtype)
            pod_spec = spec["template"]["spec"]
            # The operator overwrites a template's restartPolicy.
            self.assertNotIn("restartPolicy", pod_spec, rtype)
            container = {c["name"]: c for c in pod_spec["containers"]}[
                OPERATOR_CONTAINER]
            ports = {p["name"]: p["containerPort"] for p in container["ports"]}
            self.assertEqual(ports.get(OPERATOR_PORT_NAME), 2222, rtype)
            self.assertNotIn("TF_CONFIG",
                             [e["name"] for e in container.get("env", [])],
                             f"{rtype}: the operator sets TF_CONFIG")
            self.assertIn("limits", container["resources"], rtype)
            self.assertTrue(pod_spec["securityContext"]["runAsNonRoot"], rtype)

    def test_ps_run_ps_server_and_the_others_the_worker(self):
        for (rtype, i), pod in self.pods().items():
            program, _ = pod.program_and_args()
            self.assertEqual(program,
                             "ps_server" if rtype == "PS" else "worker",
                             f"{rtype} {i}")

    def test_trainers_share_flags_that_the_binaries_have(self):
        args = {}
        for (rtype, i), pod in self.pods().items():
            self.check_flags(f"TFJob {rtype} {i}", pod)
            if rtype != "PS":
                args[rtype] = self.full_args(pod)
        self.assertEqual(len({json.dumps(a) for a in args.values()}), 1,
                         f"chief, workers and evaluator differ: {args}")

    def test_operator_tf_config_resolves_to_the_intended_roles(self):
        counts = {t.lower(): s["replicas"] for t, s in self.specs.items()}
        for domain, evaluator_in_cluster in itertools.product(
                ("", "cluster.local"), (True, False)):
            for (rtype, i), _ in self.pods().items():
                with self.subTest(replica=rtype, index=i, domain=domain,
                                  evaluator_in_cluster=evaluator_in_cluster):
                    tf_config = operator_tf_config(
                        self.tfjob, rtype, i, "ml-team", domain,
                        evaluator_in_cluster)
                    self.assertIsNotNone(tf_config)
                    written = json.loads(tf_config)
                    out = distctl_resolve(tf_config)
                    task_type = rtype.lower()
                    self.assertEqual(out["mode"], "distributed")
                    self.assertEqual(out["task_type"], task_type)
                    self.assertEqual(out["task_index"], i)
                    self.assertEqual(out["environment"], "cloud")
                    self.assertEqual(out["cluster"], written["cluster"])
                    suffix = ".cluster.local" if domain else ""
                    own = (f"distrt-logreg-{task_type}-{i}.ml-team.svc"
                           f"{suffix}:2222")
                    if task_type in written["cluster"]:
                        self.assertEqual(written["cluster"][task_type][i], own)
                        self.assertEqual(out["master"], own)
                    else:
                        # An evaluator outside the cluster has no address.
                        self.assertEqual(out["master"], "")
                    for key, value in expected_role(counts, task_type,
                                                    i).items():
                        self.assertEqual(out[key], value, key)
        # The shipped job in words: one chief, three workers counting it,
        # two ps tasks, an evaluator on its own.
        chief = distctl_resolve(
            operator_tf_config(self.tfjob, "Chief", 0, "ns"))
        self.assertTrue(chief["is_chief"])
        self.assertEqual(chief["num_workers"], 3)
        self.assertEqual(len(chief["cluster"]["ps"]), 2)
        evaluator = distctl_resolve(
            operator_tf_config(self.tfjob, "Evaluator", 0, "ns"))
        self.assertEqual(evaluator["task_type"], "evaluator")

    def test_shared_storage(self):
        claims, gen_data_pod = shared_data()
        pods = self.pods()
        for (rtype, i), pod in pods.items():
            for volume in pod.volumes.values():
                if "persistentVolumeClaim" in volume:
                    claim = volume["persistentVolumeClaim"]["claimName"]
                    self.assertIn(claim, claims, f"{rtype} {i}")
                    self.assertIn("ReadWriteMany",
                                  claims[claim]["spec"]["accessModes"])
        self.check_storage(
            {f"{t} {i}": p for (t, i), p in pods.items() if t != "PS"},
            {f"PS {i}": p for (t, i), p in pods.items() if t == "PS"},
            gen_data_pod)


class StatefulSetTest(ManifestChecks):

    NAMESPACE = "ml-team"

    @classmethod
    def setUpClass(cls):
        documents = load_documents(STATEFULSET_YAML)
        cls.config_maps = by_kind(documents, "ConfigMap")
        cls.services = by_kind(documents, "Service")
        cls.statefulsets = by_kind(documents, "StatefulSet")
        cls.cluster_config = cls.config_maps["distrt-cluster"]["data"]

    def pod(self, statefulset):
        pod_spec = statefulset["spec"]["template"]["spec"]
        self.assertEqual(len(pod_spec["containers"]), 1)
        return Pod(pod_spec, pod_spec["containers"][0])

    def pod_env(self, statefulset, ordinal):
        """The environment the container gets: its ConfigMaps, its env (the
        downward API's namespace filled in) and HOSTNAME."""
        container = self.pod(statefulset).container
        env = {}
        for source in container.get("envFrom", []):
            config_map = self.config_maps[source["configMapRef"]["name"]]
            env.update(config_map["data"])
        for var in container.get("env", []):
            if "value" in var:
                env[var["name"]] = var["value"]
            else:
                field = var["valueFrom"]["fieldRef"]["fieldPath"]
                self.assertEqual(field, "metadata.namespace", var["name"])
                env[var["name"]] = self.NAMESPACE
        env["HOSTNAME"] = f"{statefulset['metadata']['name']}-{ordinal}"
        return env

    def task_type(self, statefulset):
        return self.pod_env(statefulset, 0)["DISTRT_TASK_TYPE"]

    def test_services_match_their_statefulsets(self):
        labels = {n: s["spec"]["template"]["metadata"]["labels"]
                  for n, s in self.statefulsets.items()}
        port = int(self.cluster_config["DISTRT_PORT"])
        for name, statefulset in self.statefulsets.items():
            with self.subTest(statefulset=name):
                spec = statefulset["spec"]
                self.assertLessEqual(spec["selector"]["matchLabels"].items(),
                                     labels[name].items())
                service = self.services[spec["serviceName"]]
                # The entrypoint names a task's Service after its StatefulSet.
                self.assertEqual(spec["serviceName"], name)
                self.assertEqual(service["spec"]["clusterIP"], "None")
                self.assertTrue(service["spec"]["publishNotReadyAddresses"])
                selector = service["spec"]["selector"].items()
                selected = [n for n, l in labels.items()
                            if selector <= l.items()]
                self.assertEqual(selected, [name])
                container = self.pod(statefulset).container
                ports = {p["name"]: p["containerPort"]
                         for p in container["ports"]}
                for service_port in service["spec"]["ports"]:
                    self.assertEqual(service_port["port"], port)
                    self.assertEqual(ports[service_port["targetPort"]], port)

    def test_replicas_match_the_cluster_config(self):
        counts = {
            "chief": 1 if self.cluster_config["DISTRT_HAS_CHIEF"] == "true"
            else 0,
            "ps": int(self.cluster_config["DISTRT_NUM_PS"]),
            "worker": int(self.cluster_config["DISTRT_NUM_WORKERS"]),
            "evaluator": 1,
        }
        prefix = self.cluster_config["DISTRT_NAME_PREFIX"]
        seen = set()
        for name, statefulset in self.statefulsets.items():
            task_type = self.task_type(statefulset)
            seen.add(task_type)
            self.assertEqual(name, f"{prefix}-{task_type}")
            replicas = statefulset["spec"]["replicas"]
            if task_type == "evaluator":
                self.assertLessEqual(replicas, 1)
            else:
                self.assertEqual(replicas, counts[task_type], name)
        self.assertEqual(seen, {"chief", "ps", "worker", "evaluator"})

    def test_entrypoint_gives_each_pod_its_role(self):
        prefix = self.cluster_config["DISTRT_NAME_PREFIX"]
        port = self.cluster_config["DISTRT_PORT"]
        domain = self.cluster_config["DISTRT_CLUSTER_DOMAIN"]
        counts = {self.task_type(s): s["spec"]["replicas"]
                  for s in self.statefulsets.values()}
        counts.pop("evaluator")
        intended = {
            t: [f"{prefix}-{t}-{i}.{prefix}-{t}.{self.NAMESPACE}.svc.{domain}"
                f":{port}" for i in range(n)]
            for t, n in counts.items()}
        for name, statefulset in self.statefulsets.items():
            task_type = self.task_type(statefulset)
            for ordinal in range(statefulset["spec"]["replicas"]):
                with self.subTest(pod=f"{name}-{ordinal}"):
                    env = self.pod_env(statefulset, ordinal)
                    tf_config = run(["sh", ENTRYPOINT, "--print"],
                                    env=clean_env(env)).stdout.strip()
                    out = distctl_resolve(tf_config)
                    self.assertEqual(out["mode"], "distributed")
                    self.assertEqual(out["cluster"], intended)
                    self.assertEqual(out["task_type"], task_type)
                    self.assertEqual(out["task_index"], ordinal)
                    for key, value in expected_role(counts, task_type,
                                                    ordinal).items():
                        self.assertEqual(out[key], value, key)
                    if task_type != "evaluator":
                        self.assertEqual(out["master"],
                                         intended[task_type][ordinal])

    def test_pods_run_their_program_through_the_entrypoint(self):
        for name, statefulset in self.statefulsets.items():
            pod = self.pod(statefulset)
            self.assertEqual(pod.container["command"], [ENTRYPOINT_NAME])
            program, _ = pod.program_and_args()
            self.assertEqual(
                program,
                "ps_server" if self.task_type(statefulset) == "ps"
                else "worker", name)
            self.check_flags(name, pod)
            self.assertTrue(pod.spec["securityContext"]["runAsNonRoot"], name)

    def test_shared_storage(self):
        claims, gen_data_pod = shared_data()
        trainers, ps_pods = {}, {}
        for name, statefulset in self.statefulsets.items():
            pod = self.pod(statefulset)
            for volume in pod.volumes.values():
                if "persistentVolumeClaim" in volume:
                    self.assertIn(volume["persistentVolumeClaim"]["claimName"],
                                  claims, name)
            (ps_pods if self.task_type(statefulset) == "ps"
             else trainers)[name] = pod
        self.check_storage(trainers, ps_pods, gen_data_pod)

    def test_data_job_flags_are_real(self):
        _, gen_data_pod = shared_data()
        self.check_flags("distrt-gen-data", gen_data_pod)


class TfJobOnOneMachineTest(unittest.TestCase):
    """The TFJob's pods as processes on this machine, each with the TF_CONFIG
    the operator would write (only the addresses mapped to local ones, so
    the evaluator stays in the cluster), the manifest's command and flags,
    and the shared claim as a directory seen through each pod's mounts."""

    # For the whole job (every trainer), not for each: a job of 3000 steps
    # takes about 20 s in an optimised build and several minutes under the
    # sanitizers on a loaded 2-core machine.
    JOB_TIMEOUT = 600

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="distrt-tfjob.",
                                     dir=os.environ.get("TEST_TMPDIR"))
        self.addCleanup(shutil.rmtree, self.root, ignore_errors=True)
        self.processes = []
        self.addCleanup(self.stop_all)

    def stop_all(self):
        for process, _ in self.processes:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=TIMEOUT)
            if process.stdout:
                process.stdout.close()

    def local_path(self, pod, path):
        """<root>/<claim>/<path inside the claim> for a path in the pod."""
        kind, claim, inside = pod.resolve(path)
        self.assertEqual(kind, "pvc", path)
        local = os.path.join(self.root, claim, inside)
        os.makedirs(os.path.dirname(local), exist_ok=True)
        return local

    def start(self, name, pod, tf_config=None, extra_args=(), pipe=False):
        """Runs the pod's program; its output goes to <root>/<name>.log, or
        to a pipe."""
        program, args = pod.program_and_args()
        argv = [PROGRAMS[program]]
        for arg in list(args) + list(extra_args):
            flag, eq, value = arg.partition("=")
            if eq and value.startswith("/"):
                value = self.local_path(pod, value)
            argv.append(flag + eq + value)
        log = os.path.join(self.root, f"{name}.log")
        env = clean_env({} if tf_config is None else {"TF_CONFIG": tf_config})
        with open(log, "w") as out:
            process = subprocess.Popen(
                argv, env=env, stderr=subprocess.STDOUT,
                stdout=subprocess.PIPE if pipe else out)
        self.processes.append((process, log))
        return process

    def wait_ok(self, name, process, deadline=None):
        """Waits for `process` until `deadline` (time.monotonic()), or for
        JOB_TIMEOUT; fails with its log if it exits non-zero or is late."""
        if deadline is None:
            deadline = time.monotonic() + self.JOB_TIMEOUT
        log = os.path.join(self.root, f"{name}.log")
        try:
            code = process.wait(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with open(log) as f:
                self.fail(f"{name} still running after the job's "
                          f"{self.JOB_TIMEOUT} s; its output so far:\n"
                          f"{f.read()[-4000:]}")
        if code != 0:
            with open(log) as f:
                self.fail(f"{name} exited {code}: {f.read()}")

    def test_the_job_trains_and_the_evaluator_follows(self):
        tfjob = by_kind(load_documents(TFJOB_YAML), "TFJob")["distrt-logreg"]
        specs = tfjob["spec"]["tfReplicaSpecs"]

        def pod(rtype):
            spec = specs[rtype]["template"]["spec"]
            return Pod(spec, spec["containers"][0])

        _, gen_data_pod = shared_data()
        self.wait_ok("gen_data", self.start("gen_data", gen_data_pod))

        # Every address of the operator's cluster gets a distinct local
        # placeholder; the ps tasks then pick free ports (--port=0) and their
        # placeholders become their real addresses.
        cluster = json.loads(operator_tf_config(tfjob, "Chief", 0,
                                                "ns"))["cluster"]
        local = {address: f"127.0.0.1:{n}" for n, address in enumerate(
            (a for tasks in cluster.values() for a in tasks), start=1)}

        def tf_config(rtype, index):
            text = operator_tf_config(tfjob, rtype, index, "ns")
            for address, mapped in local.items():
                text = text.replace(f'"{address}"', f'"{mapped}"')
            return text

        for i, address in enumerate(cluster["ps"]):
            ps = self.start(f"ps-{i}", pod("PS"), tf_config("PS", i),
                            ["--port=0", "--bind_host=127.0.0.1"], pipe=True)
            line = read_until(ps.stdout, "\n")
            port = re.search(r"serving on 127\.0\.0\.1:(\d+)", line)
            self.assertIsNotNone(port, line)
            local[address] = f"127.0.0.1:{port.group(1)}"
        ps_tasks = list(self.processes)

        trainers = {}
        for rtype in ("Evaluator", "Worker", "Chief"):
            for i in range(specs[rtype]["replicas"]):
                name = f"{rtype.lower()}-{i}"
                trainers[name] = self.start(name, pod(rtype),
                                            tf_config(rtype, i))
        deadline = time.monotonic() + self.JOB_TIMEOUT
        for name, process in trainers.items():
            self.wait_ok(name, process, deadline)
        for i, (process, _) in enumerate(ps_tasks):
            # The chief stopped the ps tasks at the end.
            self.assertEqual(process.wait(timeout=TIMEOUT), 0, f"ps {i}")

        _, chief_args = pod("Chief").program_and_args()
        flags = flag_values(chief_args)
        metrics_out = self.local_path(pod("Chief"), flags["metrics_out"])
        with open(metrics_out) as f:
            metrics = json.load(f)
        # Workers push asynchronously: the last steps may pass the target.
        self.assertGreaterEqual(metrics["global_step"],
                                int(flags["train_steps"]))
        # deploy/run_local.sh's target for the same data and flags.
        self.assertGreaterEqual(metrics["eval_accuracy"], 0.85)
        with open(os.path.join(self.root, "evaluator-0.log")) as f:
            self.assertIn("evaluated the final checkpoint", f.read())
        self.assertTrue(os.path.exists(
            metrics_out[:-len(".json")] + ".evaluator.json"))


def read_until(stream, needle, timeout=TIMEOUT):
    """Reads a pipe until `needle` appears; returns what was read."""
    seen = b""
    fd = stream.fileno()
    while needle.encode() not in seen:
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            raise AssertionError(f"no {needle!r} within {timeout}s: {seen!r}")
        chunk = os.read(fd, 4096)
        if not chunk:
            raise AssertionError(f"pipe closed before {needle!r}: {seen!r}")
        seen += chunk
    return seen.decode()


class EntrypointScriptTest(unittest.TestCase):

    ENV = {
        "DISTRT_TASK_TYPE": "worker",
        "DISTRT_NAME_PREFIX": "job",
        "DISTRT_NAMESPACE": "ns",
        "DISTRT_NUM_PS": "2",
        "DISTRT_NUM_WORKERS": "2",
        "HOSTNAME": "job-worker-1",
    }

    def entrypoint(self, args, **overrides):
        env = dict(self.ENV, **overrides)
        return run(["sh", ENTRYPOINT] + args,
                   env=clean_env({k: v for k, v in env.items()
                                  if v is not None}),
                   check_ok=False)

    def assert_refused(self, message, **overrides):
        result = self.entrypoint(["--print"], **overrides)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertEqual(result.stdout, "")
        self.assertIn(message, result.stderr)
        self.assertTrue(result.stderr.startswith(f"{ENTRYPOINT_NAME}: "))
        self.assertEqual(len(result.stderr.strip().splitlines()), 1)

    def test_defaults(self):
        result = self.entrypoint(["--print"])
        self.assertEqual(result.returncode, 0, result.stderr)
        # Compact, jobs sorted, as Kubeflow's operator writes TF_CONFIG.
        self.assertEqual(result.stdout, json.dumps({
            "cluster": {
                "chief": ["job-chief-0.job-chief.ns.svc.cluster.local:2222"],
                "ps": ["job-ps-0.job-ps.ns.svc.cluster.local:2222",
                       "job-ps-1.job-ps.ns.svc.cluster.local:2222"],
                "worker": [
                    "job-worker-0.job-worker.ns.svc.cluster.local:2222",
                    "job-worker-1.job-worker.ns.svc.cluster.local:2222"],
            },
            "task": {"type": "worker", "index": 1},
        }, separators=(",", ":")) + "\n")

    def test_empty_cluster_domain_and_no_chief(self):
        result = self.entrypoint(["--print"], DISTRT_CLUSTER_DOMAIN="",
                                 DISTRT_HAS_CHIEF="false", DISTRT_PORT="5000",
                                 DISTRT_NUM_PS="0", HOSTNAME="job-worker-0")
        self.assertEqual(result.returncode, 0, result.stderr)
        out = distctl_resolve(result.stdout)
        self.assertEqual(out["cluster"], {"worker": [
            "job-worker-0.job-worker.ns.svc:5000",
            "job-worker-1.job-worker.ns.svc:5000"]})
        self.assertTrue(out["is_chief"])

    def test_hostname_without_ordinal(self):
        self.assert_refused('HOSTNAME "job-worker" does not end in a '
                            "StatefulSet ordinal", HOSTNAME="job-worker")
        self.assert_refused("does not end in a StatefulSet ordinal",
                            HOSTNAME="job-worker-01")

    def test_ordinal_out_of_range(self):
        self.assert_refused('pod "job-worker-2": ordinal 2 is out of range, '
                            "the cluster has 2 worker task(s)",
                            HOSTNAME="job-worker-2")
        self.assert_refused("ordinal 1 is out of range",
                            DISTRT_TASK_TYPE="evaluator",
                            HOSTNAME="job-evaluator-1")
        self.assert_refused("the cluster has no chief task",
                            DISTRT_TASK_TYPE="chief", DISTRT_HAS_CHIEF="false",
                            HOSTNAME="job-chief-0")

    def test_pod_of_another_statefulset(self):
        self.assert_refused('HOSTNAME "job-ps-0" is not a pod of StatefulSet '
                            '"job-worker"', HOSTNAME="job-ps-0")

    def test_bad_settings(self):
        self.assert_refused("DISTRT_NUM_PS is not set", DISTRT_NUM_PS=None)
        self.assert_refused('DISTRT_TASK_TYPE "master" is not chief, worker, '
                            "ps or evaluator", DISTRT_TASK_TYPE="master")
        self.assert_refused('DISTRT_NUM_WORKERS "two" is not a number',
                            DISTRT_NUM_WORKERS="two")
        self.assert_refused('DISTRT_PORT "70000" is not a port',
                            DISTRT_PORT="70000")
        self.assert_refused('DISTRT_NAMESPACE "ML" is not a DNS label',
                            DISTRT_NAMESPACE="ML")
        self.assert_refused("no chief and no workers",
                            DISTRT_HAS_CHIEF="false", DISTRT_NUM_WORKERS="0")

    def test_runs_the_program_with_tf_config(self):
        printed = self.entrypoint(["--print"]).stdout.strip()
        result = self.entrypoint(["sh", "-c", 'printf %s "$TF_CONFIG"'])
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout, printed)
        self.assertIn(f"worker 1, TF_CONFIG={printed}", result.stderr)
        self.assertEqual(self.entrypoint([]).returncode, 2)

    def test_exit_status_passes_through(self):
        for idle in ("false", "true"):
            result = self.entrypoint(["sh", "-c", "exit 3"],
                                     DISTRT_IDLE_AFTER_SUCCESS=idle)
            self.assertEqual(result.returncode, 3, idle)

    def start(self, program, **overrides):
        env = clean_env(dict(self.ENV, **overrides))
        # A session of its own, so that cleanup reaches the script's children.
        process = subprocess.Popen(["sh", ENTRYPOINT] + program, env=env,
                                   stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE,
                                   start_new_session=True)

        def stop():
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait(timeout=TIMEOUT)
            process.stdout.close()
            process.stderr.close()
        self.addCleanup(stop)
        return process

    def test_idles_after_success_until_terminated(self):
        process = self.start(["true"], DISTRT_IDLE_AFTER_SUCCESS="true")
        read_until(process.stderr, "idle until the pod is deleted")
        self.assertIsNone(process.poll())
        process.send_signal(signal.SIGTERM)
        self.assertEqual(process.wait(timeout=TIMEOUT), 0)

    def test_passes_term_on_to_the_program(self):
        process = self.start(["sh", "-c", "echo started; exec sleep 60"],
                             DISTRT_IDLE_AFTER_SUCCESS="true")
        read_until(process.stdout, "started")
        process.send_signal(signal.SIGTERM)
        self.assertEqual(process.wait(timeout=TIMEOUT), 128 + signal.SIGTERM)


def dockerfile_stages():
    """[(FROM line, [(INSTRUCTION, arguments)])], continuation lines joined."""
    with open(DOCKERFILE) as f:
        text = f.read()
    lines, current = [], ""
    for line in text.splitlines():
        if line.lstrip().startswith("#") and not current:
            continue
        if line.rstrip().endswith("\\"):
            current += line.rstrip()[:-1] + " "
            continue
        current += line
        if current.strip():
            lines.append(" ".join(current.split()))
        current = ""
    stages = []
    for line in lines:
        instruction, _, rest = line.partition(" ")
        if instruction.upper() == "FROM":
            stages.append((rest, []))
        else:
            stages[-1][1].append((instruction.upper(), rest))
    return stages


class DockerfileTest(unittest.TestCase):

    # In debian:12-slim already (Priority: required, or needed by apt).
    BASE_PACKAGES = {"libc6", "libgcc-s1", "libstdc++6", "zlib1g"}

    @classmethod
    def setUpClass(cls):
        cls.stages = dockerfile_stages()

    def manifest_programs(self):
        programs = set()
        for path in (TFJOB_YAML, STATEFULSET_YAML, SHARED_DATA_YAML):
            for document in load_documents(path):
                if document["kind"] == "TFJob":
                    templates = [s["template"] for s in
                                 document["spec"]["tfReplicaSpecs"].values()]
                elif document["kind"] in ("StatefulSet", "Job"):
                    templates = [document["spec"]["template"]]
                else:
                    continue
                for template in templates:
                    for container in template["spec"]["containers"]:
                        argv = container["command"] + container.get("args", [])
                        programs.add(argv[0])
                        if argv[0] == ENTRYPOINT_NAME:
                            programs.add(argv[1])
        return programs

    def test_stages(self):
        self.assertEqual(len(self.stages), 2)
        (build_from, build), (runtime_from, runtime) = self.stages
        self.assertEqual(build_from, "debian:12 AS build")
        self.assertEqual(runtime_from, "debian:12-slim")
        build_runs = " ".join(a for i, a in build if i == "RUN")
        self.assertIn("bash tools/setup.sh", build_runs)
        self.assertRegex(
            build_runs,
            r"bazel build -c opt //ps_server //worker //client:distctl "
            r"//tools/gen_data")
        users = [a for i, a in runtime if i == "USER"]
        self.assertEqual(len(users), 1)
        self.assertNotIn(users[0].split(":")[0], ("0", "root"))

    def test_copies_every_program_the_manifests_run(self):
        (_, build), (_, runtime) = self.stages
        build_runs = " ".join(a for i, a in build if i == "RUN")
        installed = {}
        for instruction, args in runtime:
            if instruction == "COPY":
                parts = args.split()
                self.assertEqual(parts[0], "--from=build", args)
                self.assertEqual(len(parts), 3, args)
                installed[parts[2]] = parts[1]
        programs = self.manifest_programs() | {"distctl"}
        self.assertEqual(programs, {"ps_server", "worker", "gen_data",
                                    "distctl", ENTRYPOINT_NAME})
        for program in programs:
            source = installed.get(f"/usr/local/bin/{program}")
            self.assertEqual(source, f"/out/{program}",
                             f"{program} is not copied to /usr/local/bin")
        # What /out holds: the binaries copied out of bazel-bin (symlinks
        # there, so cp -L), and the entrypoint from the sources.
        for program, label_path in (("ps_server", "ps_server/ps_server"),
                                    ("worker", "worker/worker"),
                                    ("distctl", "client/distctl"),
                                    ("gen_data", "tools/gen_data/gen_data")):
            self.assertRegex(build_runs,
                             r"cp -L [^&]*bazel-bin/" + re.escape(label_path)
                             + r"[ ][^&]*/out/", program)
        self.assertIn(f"install -m 0755 {ENTRYPOINT} /out/", build_runs)

    def test_runtime_packages_cover_the_shared_libraries(self):
        if shutil.which("dpkg") is None or shutil.which("ldd") is None:
            self.skipTest("needs dpkg and ldd (Debian)")
        (_, _), (_, runtime) = self.stages
        apt = " ".join(a for i, a in runtime if i == "RUN")
        listed = set(re.search(r"--no-install-recommends ([^&]*)",
                               apt).group(1).split())
        libraries = set()
        for program in ("ps_server", "worker", "distctl", "gen_data"):
            out = run(["ldd", PROGRAMS[program]]).stdout
            libraries |= set(re.findall(r"=> (/\S+)", out))
        candidates = {lib: {lib, os.path.realpath(lib)} for lib in libraries}
        owners = {}
        query = run(["dpkg", "-S"] + sorted(set().union(*candidates.values())),
                    check_ok=False).stdout
        for line in query.splitlines():
            packages, _, path = line.partition(": ")
            owners[path] = {p.split(":")[0] for p in packages.split(", ")}
        needed = {}
        for lib, paths in candidates.items():
            found = set().union(*(owners.get(p, set()) for p in paths))
            # Not from a Debian package (e.g. CUDA's), or a sanitizer's
            # runtime (--config=asan/tsan): not for the release image.
            found = {p for p in found
                     if not re.match(r"lib(a|ub|t|l)san\d", p)}
            for package in found:
                needed.setdefault(package, []).append(lib)
        missing = {p: libs for p, libs in needed.items()
                   if p not in listed and p not in self.BASE_PACKAGES}
        self.assertEqual(missing, {}, "install these in the runtime stage")

    def test_the_torchscript_plugin_and_libtorch_are_in_the_image(self):
        """The worker loads the plugin from beside itself; the plugin's own
        libraries (not LibTorch's dependencies, which its package brings)
        come from packages the runtime stage installs."""
        if shutil.which("dpkg") is None or shutil.which("objdump") is None:
            self.skipTest("needs dpkg and objdump (Debian)")
        (_, build), (_, runtime) = self.stages
        build_runs = " ".join(a for i, a in build if i == "RUN")
        self.assertRegex(build_runs, r"cp -L [^&]*bazel-bin/runtime/torchscript/"
                         r"libdistrt_torchscript\.so[ ][^&]*/out/")
        copies = [a for i, a in runtime if i == "COPY"]
        self.assertIn("--from=build /out/libdistrt_torchscript.so "
                      "/usr/local/bin/libdistrt_torchscript.so", copies)
        apt = " ".join(a for i, a in runtime if i == "RUN")
        listed = set(re.search(r"--no-install-recommends ([^&]*)",
                               apt).group(1).split())
        needed = re.findall(r"NEEDED\s+(\S+)",
                            run(["objdump", "-p", PLUGIN]).stdout)
        self.assertIn("libtorch.so.1.13", needed)
        for library in needed:
            # A sanitizer's runtime (--config=asan/tsan): not for the image.
            if re.match(r"lib(a|ub|t|l)san\.so", library):
                continue
            path = run(["/bin/sh", "-c", f"ldd {PLUGIN} | grep '{library} '"],
                       check_ok=False).stdout.split("=> ")[-1].split(" (")[0]
            # dpkg knows a library by one of its names (/lib or /usr/lib).
            packages = set()
            for name in {path, os.path.realpath(path)}:
                owners = run(["dpkg", "-S", name],
                             check_ok=False).stdout.split(": ")[0]
                packages |= {p.split(":")[0] for p in owners.split(", ") if p}
            self.assertTrue(packages & (listed | self.BASE_PACKAGES),
                            f"{library} ({packages}): install its package")


if __name__ == "__main__":
    unittest.main(verbosity=2)
