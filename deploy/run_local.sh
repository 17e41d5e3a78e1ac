#!/usr/bin/env bash
# The main job on one machine: a local cluster training a model.
#
# Generates a synthetic binary-classification dataset (LIBSVM, with a known
# ground truth), starts the cluster's ps tasks as real ps_server processes
# on 127.0.0.1, then its chief and workers as worker processes with TF_CONFIG
# set for each, and trains logistic regression with ParameterServerStrategy.
# Every output line is prefixed with its task ([chief:0]); the chief prints
# progress, checkpoints, evaluates, writes metrics.json and stops the ps
# tasks. Every process it starts is stopped when it exits, whatever happens.
#
#   deploy/run_local.sh [CLUSTER_SPEC_JSON] [-- WORKER_FLAGS...]
#     default spec: deploy/examples/train_cluster.json (chief, worker, 2 ps)
#
# Ports in the spec are placeholders: each task gets a free port from the OS.
# Evaluator tasks in the spec are not started (the evaluator comes later).
set -euo pipefail
cd "$(dirname "$0")/.."
spec_template=deploy/examples/train_cluster.json
if [ $# -gt 0 ] && [ "$1" != "--" ]; then spec_template=$1; shift; fi
[ "${1:-}" = "--" ] && shift
extra_flags=("$@")

bash tools/setup.sh
echo "== building ps_server, worker, distctl and gen_data"
bazel build //ps_server //worker //client:distctl //tools/gen_data 2>&1 | grep -E '^ERROR' || true
ps_server=bazel-bin/ps_server/ps_server
worker=bazel-bin/worker/worker
distctl=bazel-bin/client/distctl
gen_data=bazel-bin/tools/gen_data/gen_data
for b in "$ps_server" "$worker" "$distctl" "$gen_data"; do
  [ -x "$b" ] || { echo "build failed: $b is missing" >&2; exit 1; }
done

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

echo "== distctl vars (before training: nothing yet)"
"$distctl" vars --cluster_spec="$workdir/cluster.json"

echo "== generating data"
"$gen_data" --task=binary --rows=100000 --features=2000 --features_per_row=20 \
  --noise=0.05 --eval_fraction=0.2 --seed=7 --out_dir="$workdir/data" --prefix=ctr

echo "== training logreg: chief and workers (progress every few seconds)"
flags=(--model=logreg --train_data="$workdir/data/ctr.train.svm"
       --eval_data="$workdir/data/ctr.eval.svm" --train_steps=3000
       --global_batch_size=128 --optimizer=adagrad --learning_rate=0.1
       --num_cpu_replicas=2 --checkpoint_dir="$workdir/checkpoints"
       --checkpoint_every_secs=10 --metrics_out="$workdir/metrics.json"
       --log_every_secs=3 "${extra_flags[@]}")
chief_pid=
worker_pids=()
while read -r job index; do
  case "$job" in chief|worker) ;; *) continue ;; esac
  TF_CONFIG="{\"cluster\": $cluster, \"task\": {\"type\": \"$job\", \"index\": $index}}" \
    "$worker" "${flags[@]}" > >(sed -u "s/^/[$job:$index] /") 2>&1 &
  pid=$!
  pids+=("$pid")
  if [ "$job" = chief ]; then chief_pid=$pid; else worker_pids+=("$pid"); fi
done <<< "$tasks"
[ -n "$chief_pid" ] || { echo "the cluster spec has no chief" >&2; exit 1; }

status=0
wait "$chief_pid" || { status=$?; echo "the chief failed (exit $status)" >&2; }
for pid in "${worker_pids[@]}"; do
  wait "$pid" || { s=$?; echo "a worker failed (exit $s)" >&2; status=$s; }
done
for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
pids=()
[ "$status" = 0 ] || exit "$status"

echo "== checkpoints written by the ps tasks"
cat "$workdir/checkpoints/checkpoints"
echo "== final metrics ($workdir/metrics.json)"
cat "$workdir/metrics.json"
python3 - "$workdir/metrics.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
ok = m["eval_accuracy"] is not None and m["eval_accuracy"] >= 0.85
print("== eval accuracy %.4f (target 0.85): %s" % (m["eval_accuracy"], "reached" if ok else "NOT reached"))
sys.exit(0 if ok else 1)
PY
