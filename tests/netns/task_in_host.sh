#!/usr/bin/env bash
# Runs a task's binary on its own "host": the network namespace that
# netns_hosts.py made for the task TF_CONFIG names, with the host's name
# (a UTS namespace of its own). With `launch --keep_addresses` the task
# listens on its TF_CONFIG address, the host's.
# `launch` starts it in place of ps_server / worker (--ps_server_bin,
# --worker_bin), through a two-line script that names the real binary:
#
#   task_in_host.sh REAL_BINARY FLAGS...
#
# DISTRT_NETNS_PREFIX names the namespaces: PREFIX-<type><index>, e.g.
# PREFIX-ps0; the task's host is <type><index> in TF_CONFIG too.
set -euo pipefail
real=$1
shift
: "${DISTRT_NETNS_PREFIX:?set by the test that made the namespaces}"
: "${TF_CONFIG:?the task comes from TF_CONFIG}"
type=$(sed -n 's/.*"task":{[^}]*"type":"\([a-z]*\)".*/\1/p' <<<"$TF_CONFIG")
index=$(sed -n 's/.*"task":{[^}]*"index":\([0-9]*\).*/\1/p' <<<"$TF_CONFIG")
host="$type$index"
namespace="$DISTRT_NETNS_PREFIX-$host"
if [ -z "$type" ] || [ -z "$index" ] || ! ip netns list | grep -qw "$namespace"; then
  echo "task_in_host.sh: no namespace for the task of TF_CONFIG ($namespace)" >&2
  exit 2
fi
exec ip netns exec "$namespace" unshare --uts \
  sh -c 'hostname "$0" && exec "$@"' "$host" "$real" "$@"
