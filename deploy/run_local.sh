#!/usr/bin/env bash
# The main job on one machine: a local cluster from a cluster spec.
#
# Until the worker lands this starts the cluster's parameter servers as real
# ps_server processes on 127.0.0.1, shows what every task of the cluster
# resolves from its TF_CONFIG, checks the ps tasks with `distctl stats`,
# lists their variables, checkpoints them, and stops them with `distctl
# shutdown`. Every process it starts is stopped when it exits, whatever
# happens.
#
#   deploy/run_local.sh [CLUSTER_SPEC_JSON]   (default: deploy/examples/local_cluster.json)
#
# Ports in the spec are placeholders: each task gets a free port from the OS.
set -euo pipefail
cd "$(dirname "$0")/.."
spec_template=${1:-deploy/examples/local_cluster.json}

bash tools/setup.sh
echo "== building ps_server and distctl"
bazel build //ps_server //client:distctl 2>&1 | grep -E '^ERROR' || true
ps_server=bazel-bin/ps_server/ps_server
distctl=bazel-bin/client/distctl
[ -x "$ps_server" ] && [ -x "$distctl" ] || { echo "build failed" >&2; exit 1; }

workdir=$(mktemp -d -t distrt-local.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$workdir"
}
trap cleanup EXIT

# The spec with every address replaced by 127.0.0.1 and a free port.
python3 - "$spec_template" > "$workdir/cluster.json" <<'PY'
import json, socket, sys
spec = json.load(open(sys.argv[1]))
cluster = spec.get("cluster", spec)
sockets = []
def free_address():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    sockets.append(s)  # held until all are chosen, so none repeats
    return "127.0.0.1:%d" % s.getsockname()[1]
for job, tasks in cluster.items():
    if isinstance(tasks, dict):
        cluster[job] = {k: free_address() for k in tasks}
    else:
        cluster[job] = [free_address() for _ in tasks]
print(json.dumps(cluster))
PY
cluster=$(cat "$workdir/cluster.json")
echo "== cluster: $cluster"

tasks=$(python3 -c 'import json,sys
c = json.load(open(sys.argv[1]))
for job, t in c.items():
    for i in (sorted(t, key=int) if isinstance(t, dict) else range(len(t))):
        print(job, i)' "$workdir/cluster.json")

echo "== what each task resolves from its TF_CONFIG (distctl resolve)"
while read -r job index; do
  TF_CONFIG="{\"cluster\": $cluster, \"task\": {\"type\": \"$job\", \"index\": $index}}" \
    "$distctl" resolve | python3 -c 'import json,sys
r = json.load(sys.stdin)
print("  %-9s %s  is_chief=%-5s num_workers=%-4s id_in_cluster=%s" % (
    "%s %s" % (r["task_type"], r["task_index"]), r["master"], r["is_chief"],
    r["num_workers"], r["id_in_cluster"]))'
done <<< "$tasks"

echo "== starting the ps tasks"
while read -r job index; do
  [ "$job" = ps ] || continue
  TF_CONFIG="{\"cluster\": $cluster, \"task\": {\"type\": \"ps\", \"index\": $index}}" \
    "$ps_server" --bind_host=127.0.0.1 > "$workdir/ps$index.log" 2>&1 &
  pids+=($!)
done <<< "$tasks"

# Each ps task prints one line when it serves; wait for it (bounded).
for i in "${!pids[@]}"; do
  log="$workdir/ps$i.log"
  for _ in $(seq 1 100); do
    grep -q 'serving on' "$log" 2>/dev/null && break
    kill -0 "${pids[$i]}" 2>/dev/null || break
    sleep 0.1
  done
  if ! grep -q 'serving on' "$log"; then
    echo "ps task $i did not start:" >&2; cat "$log" >&2; exit 1
  fi
  echo "  $(head -n 1 "$log")"
done

echo "== distctl stats"
"$distctl" stats --cluster_spec="$workdir/cluster.json"

echo "== distctl vars"
"$distctl" vars --cluster_spec="$workdir/cluster.json"

echo "== distctl save (a checkpoint of every ps task's shard)"
"$distctl" save "$workdir/checkpoints" --cluster_spec="$workdir/cluster.json"

echo "== distctl shutdown"
"$distctl" shutdown --cluster_spec="$workdir/cluster.json"
for pid in "${pids[@]}"; do
  wait "$pid" || { echo "a ps task exited with status $?" >&2; exit 1; }
done
pids=()
echo "== all ps tasks exited cleanly"
