"""Kubeflow's training operator (TFJob), as far as TF_CONFIG goes: what it
sets in each replica's pod, for the tests that run a TFJob's tasks
(deploy_manifests_test as processes, docker_job_test as containers)."""

import json

# Kubeflow's training operator, as far as TF_CONFIG goes. Sources, in
# github.com/kubeflow/training-operator, pkg/controller.v1/tensorflow/:
#   tensorflow.go   genClusterSpec, genTFConfigJSONStr
#   util.go         GetPortFromTFJob, isDistributed
#   tfjob_controller.go  SetClusterSpec (TF_CONFIG goes into the container
#                   named "tensorflow" only; not set when not distributed)
#   pod_test.go     "Test ClusterSpec": the exact strings expected, e.g.
#                   {"cluster":{"evaluator":["test-tfjob-evaluator-0.ns3.svc
#                   :2222"],"ps":[...],"worker":[...]},"task":{"type":
#                   "worker","index":0},"environment":"cloud"}
# and pkg/apis/kubeflow.org/v1 (tensorflow_types.go): container "tensorflow",
# port name "tfjob-port", default port 2222, replica types Chief, Master,
# PS, Worker, Evaluator.
OPERATOR_CONTAINER = "tensorflow"
OPERATOR_PORT_NAME = "tfjob-port"
OPERATOR_DEFAULT_PORT = 2222
OPERATOR_REPLICA_TYPES = {"Chief", "Master", "PS", "Worker", "Evaluator"}


def operator_port(replica_spec):
    # GetPortFromTFJob: the "tfjob-port" port of the "tensorflow" container,
    # else 2222.
    for container in replica_spec["template"]["spec"]["containers"]:
        if container["name"] == OPERATOR_CONTAINER:
            for port in container.get("ports", []):
                if port.get("name") == OPERATOR_PORT_NAME:
                    return port["containerPort"]
    return OPERATOR_DEFAULT_PORT


def operator_tf_config(tfjob, replica_type, index, namespace,
                       custom_cluster_domain="", evaluator_in_cluster=True):
    """TF_CONFIG of pod <job>-<type>-<index>, or None where the operator
    sets none. evaluator_in_cluster=False: as older operators wrote it."""
    specs = tfjob["spec"]["tfReplicaSpecs"]
    # isDistributed: no TF_CONFIG when the job has exactly one replica.
    if sum(s.get("replicas", 1) for s in specs.values()) == 1:
        return None
    # enableDynamicWorker switches to a "sparseCluster" document (not
    # modelled: the manifest must not enable it, see TfJobTest).
    assert not tfjob["spec"].get("enableDynamicWorker", False)
    name = tfjob["metadata"]["name"]
    cluster = {}
    # genClusterSpec: every replica type under its lower-cased name, the
    # Evaluator included (older operators skipped it: v1alpha2 since
    # kubeflow/tf-operator#650, and early v1 tensorflow.go); task i at
    # "<job>-<type>-<i>.<namespace>.svc[.<CUSTOM_CLUSTER_DOMAIN>]:<port>".
    for rtype, spec in specs.items():
        if rtype == "Evaluator" and not evaluator_in_cluster:
            continue
        rt = rtype.lower()
        suffix = f".{custom_cluster_domain}" if custom_cluster_domain else ""
        cluster[rt] = [
            f"{name}-{rt}-{i}.{namespace}.svc{suffix}:{operator_port(spec)}"
            for i in range(spec.get("replicas", 1))]
    # genTFConfigJSONStr: Go's encoding/json of struct TFConfig: fields in
    # order cluster, task, environment ("cloud"); map keys sorted; compact.
    return json.dumps({"cluster": dict(sorted(cluster.items())),
                       "task": {"type": replica_type.lower(), "index": index},
                       "environment": "cloud"}, separators=(",", ":"))
