#!/usr/bin/env bash
# Builds examples/out_of_tree as a workspace of its own, with distrt as a
# local_repository, and runs its programs: mirrored_sum (runtime/ alone)
# and cluster_sum (MakeStrategy with the transport) three ways: alone, as
# the chief of a job with one ps_server (@distrt//ps_server, built from
# here too), and as the two tasks of a multi-worker mirrored job. A change
# that breaks the public surface for code outside the repository fails
# here. CI runs it (.ci/run); needs tools/setup.sh's packages. Uses an
# output base of its own (an output base belongs to one workspace) and
# leaves no symlinks in the source tree. Every process it starts is
# stopped before it returns.
set -euo pipefail
cd "$(dirname "$0")"
output_base="${HOME}/.cache/distrt-out-of-tree-$(pwd | md5sum | cut -c1-12)"
bazel_() { bazel --output_base="$output_base" "$@"; }
bazel_ build --symlink_prefix=/ //:mirrored_sum //:cluster_sum \
  @distrt//ps_server
bin="$(bazel_ info bazel-bin 2>/dev/null)"
ps_server="$bin/external/distrt/ps_server/ps_server"
bazel_ shutdown

work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# Ports the OS chooses (bind to port 0), for the multi-worker tasks.
free_ports() {
  /usr/bin/python3 - "$1" <<'PY'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

echo "== mirrored_sum"
"$bin/mirrored_sum"

echo "== cluster_sum, alone (no TF_CONFIG)"
env -u TF_CONFIG "$bin/cluster_sum"

echo "== cluster_sum, chief of a job with one ps task"
# Its first line says the port it took (--port=0: the OS chooses).
exec {ps_out}< <(exec env TF_CONFIG='{"cluster":{"chief":["127.0.0.1:1"],"ps":["127.0.0.1:2"]},"task":{"type":"ps","index":0}}' \
  "$ps_server" --port=0 --bind_host=127.0.0.1 2>&1)
pids+=($!)
line=""
read -r -t 30 -u "$ps_out" line || true
ps_port="$(sed -n 's/.*serving on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' <<< "$line")"
[[ -n "$ps_port" ]] || { echo "ps_server did not start within 30 s: $line"; exit 1; }
# The rest of its output, read so that a full pipe never blocks it.
cat <&"$ps_out" > /dev/null &
pids+=($!)
TF_CONFIG="{\"cluster\":{\"chief\":[\"127.0.0.1:1\"],\"ps\":[\"127.0.0.1:$ps_port\"]},\"task\":{\"type\":\"chief\",\"index\":0}}" \
  timeout 120 "$bin/cluster_sum"

echo "== cluster_sum, two multi-worker mirrored tasks"
read -r chief_port worker_port <<< "$(free_ports 2)"
cluster="{\"chief\":[\"127.0.0.1:$chief_port\"],\"worker\":[\"127.0.0.1:$worker_port\"]}"
TF_CONFIG="{\"cluster\":$cluster,\"task\":{\"type\":\"worker\",\"index\":0}}" \
  timeout 120 "$bin/cluster_sum" > "$work/worker.log" 2>&1 &
worker_pid=$!
pids+=($worker_pid)
TF_CONFIG="{\"cluster\":$cluster,\"task\":{\"type\":\"chief\",\"index\":0}}" \
  timeout 120 "$bin/cluster_sum"
wait "$worker_pid" || { echo "the worker task failed:"; cat "$work/worker.log"; exit 1; }
cat "$work/worker.log"
