#!/bin/sh
# TF_CONFIG for a pod of a StatefulSet, built from the pod's ordinal; then
# runs the task's program with it. The entrypoint of every pod of
# deploy/kubernetes/statefulset.yaml (the Kubernetes variant without the
# Kubeflow operator).
#
#   tf_config_from_ordinal.sh PROGRAM [ARGS...]   export TF_CONFIG, run PROGRAM
#   tf_config_from_ordinal.sh --print             print TF_CONFIG and exit
#
# Each task type is a StatefulSet named <prefix>-<type> with a headless
# Service of the same name, so pod <prefix>-<type>-<i> is task i of <type> and
# is reached at
#   <prefix>-<type>-<i>.<prefix>-<type>.<namespace>.svc.<cluster domain>:<port>
# The cluster lists chief (if any), ps and worker tasks. The evaluator is not
# part of it (TensorFlow's documented form): it runs as task evaluator 0, so
# its StatefulSet has one replica.
#
# Environment (statefulset.yaml sets it from a ConfigMap and the downward API):
#   DISTRT_TASK_TYPE        chief, worker, ps or evaluator            (required)
#   DISTRT_NAME_PREFIX      prefix of the StatefulSet/Service names   (required)
#   DISTRT_NAMESPACE        the pod's namespace                       (required)
#   DISTRT_NUM_PS           number of ps tasks                        (required)
#   DISTRT_NUM_WORKERS      number of worker tasks, chief not counted (required)
#   DISTRT_HAS_CHIEF        true or false                       (default true)
#   DISTRT_PORT             every task's port                   (default 2222)
#   DISTRT_CLUSTER_DOMAIN   default cluster.local; set but empty: addresses
#                           end in ".svc" and rely on the pod's DNS search path
#   DISTRT_IDLE_AFTER_SUCCESS  true: when PROGRAM exits 0, stay up idle until
#                           the pod is deleted, since a StatefulSet restarts
#                           every container that exits; TERM/INT are passed on
#                           to PROGRAM while it runs   (default false: exec it)
#   HOSTNAME                the pod's name, <prefix>-<type>-<ordinal>
#                           (container runtimes set it; else `uname -n`)
#
# Bad input: one line on stderr naming the problem, exit status 2.
set -eu

me=tf_config_from_ordinal.sh

die() {
  echo "$me: $*" >&2
  exit 2
}

# A count or index: decimal digits, no leading zero, at most 6 digits.
is_number() {
  case $1 in
    '' | *[!0-9]* | 0?*) return 1 ;;
  esac
  [ ${#1} -le 6 ]
}

# A DNS label: lower-case letters, digits and '-', not at either end.
is_dns_label() {
  case $1 in
    '' | *[!a-z0-9-]* | -* | *-) return 1 ;;
  esac
}

# A DNS name: labels joined by '.'.
is_dns_name() {
  case $1 in
    '' | *[!a-z0-9.-]* | .* | *. | *..*) return 1 ;;
  esac
}

required() {
  eval "value=\${$1-}"
  [ -n "$value" ] || die "$1 is not set ($2)"
}

print_only=false
if [ "${1-}" = --print ]; then
  print_only=true
  shift
  [ $# -eq 0 ] || die "--print takes no other arguments"
elif [ $# -eq 0 ]; then
  die "usage: $me PROGRAM [ARGS...]  or  $me --print"
fi

required DISTRT_TASK_TYPE "chief, worker, ps or evaluator"
required DISTRT_NAME_PREFIX "prefix of the StatefulSet and Service names"
required DISTRT_NAMESPACE "the pod's namespace, from the downward API"
required DISTRT_NUM_PS "number of ps tasks"
required DISTRT_NUM_WORKERS "number of worker tasks, the chief not counted"

type=$DISTRT_TASK_TYPE
prefix=$DISTRT_NAME_PREFIX
namespace=$DISTRT_NAMESPACE
num_ps=$DISTRT_NUM_PS
num_workers=$DISTRT_NUM_WORKERS
has_chief=${DISTRT_HAS_CHIEF:-true}
port=${DISTRT_PORT:-2222}
cluster_domain=${DISTRT_CLUSTER_DOMAIN-cluster.local}
idle=${DISTRT_IDLE_AFTER_SUCCESS:-false}

case $type in
  chief | worker | ps | evaluator) ;;
  *) die "DISTRT_TASK_TYPE \"$type\" is not chief, worker, ps or evaluator" ;;
esac
is_dns_label "$prefix" ||
  die "DISTRT_NAME_PREFIX \"$prefix\" is not a DNS label (a-z, 0-9, '-')"
is_dns_label "$namespace" ||
  die "DISTRT_NAMESPACE \"$namespace\" is not a DNS label (a-z, 0-9, '-')"
is_number "$num_ps" || die "DISTRT_NUM_PS \"$num_ps\" is not a number"
is_number "$num_workers" ||
  die "DISTRT_NUM_WORKERS \"$num_workers\" is not a number"
case $has_chief in
  true) num_chiefs=1 ;;
  false) num_chiefs=0 ;;
  *) die "DISTRT_HAS_CHIEF \"$has_chief\" is not true or false" ;;
esac
if ! is_number "$port" || [ "$port" -lt 1 ] || [ "$port" -gt 65535 ]; then
  die "DISTRT_PORT \"$port\" is not a port (1-65535)"
fi
if [ -n "$cluster_domain" ] && ! is_dns_name "$cluster_domain"; then
  die "DISTRT_CLUSTER_DOMAIN \"$cluster_domain\" is not a DNS name"
fi
case $idle in
  true | false) ;;
  *) die "DISTRT_IDLE_AFTER_SUCCESS \"$idle\" is not true or false" ;;
esac
[ $((num_chiefs + num_workers)) -gt 0 ] ||
  die "the cluster has no chief and no workers" \
    "(DISTRT_HAS_CHIEF=false, DISTRT_NUM_WORKERS=0)"

# The task index: the ordinal that ends the pod name.
statefulset=$prefix-$type
# shellcheck disable=SC3028  # HOSTNAME comes from the container's environment
host=${HOSTNAME:-$(uname -n)}
ordinal=${host##*-}
case $host in
  *-*) ;;
  *) ordinal= ;;
esac
is_number "$ordinal" ||
  die "HOSTNAME \"$host\" does not end in a StatefulSet ordinal" \
    "(expected $statefulset-<ordinal>)"
[ "${host%-*}" = "$statefulset" ] ||
  die "HOSTNAME \"$host\" is not a pod of StatefulSet \"$statefulset\"" \
    "(DISTRT_NAME_PREFIX=$prefix, DISTRT_TASK_TYPE=$type)"
case $type in
  chief) count=$num_chiefs what="DISTRT_HAS_CHIEF=$has_chief" ;;
  worker) count=$num_workers what="DISTRT_NUM_WORKERS=$num_workers" ;;
  ps) count=$num_ps what="DISTRT_NUM_PS=$num_ps" ;;
  evaluator) count=1 what="the evaluator is task 0 only" ;;
esac
[ "$count" -gt 0 ] || die "pod \"$host\": the cluster has no $type task ($what)"
[ "$ordinal" -lt "$count" ] ||
  die "pod \"$host\": ordinal $ordinal is out of range," \
    "the cluster has $count $type task(s) ($what)"

domain_suffix=${cluster_domain:+.$cluster_domain}

# "<type>":["<address of task 0>",...] for a task type with COUNT tasks.
job_json() {
  job_type=$1 job_count=$2 job_service=$prefix-$1
  list='' i=0
  while [ "$i" -lt "$job_count" ]; do
    host_name=$job_service-$i.$job_service.$namespace.svc$domain_suffix
    list="$list${list:+,}\"$host_name:$port\""
    i=$((i + 1))
  done
  printf '"%s":[%s]' "$job_type" "$list"
}

# Jobs in sorted order, as Go's encoding/json (and so Kubeflow) writes them;
# a task type with no tasks is left out.
cluster=
for job in chief ps worker; do
  case $job in
    chief) n=$num_chiefs ;;
    ps) n=$num_ps ;;
    worker) n=$num_workers ;;
  esac
  [ "$n" -gt 0 ] || continue
  cluster="$cluster${cluster:+,}$(job_json "$job" "$n")"
done
task="{\"type\":\"$type\",\"index\":$ordinal}"
# shellcheck disable=SC2089  # JSON: its quotes are meant literally
TF_CONFIG="{\"cluster\":{$cluster},\"task\":$task}"

if [ "$print_only" = true ]; then
  printf '%s\n' "$TF_CONFIG"
  exit 0
fi

# shellcheck disable=SC2090
export TF_CONFIG
echo "$me: $type $ordinal, TF_CONFIG=$TF_CONFIG" >&2
if [ "$idle" = false ]; then
  exec "$@"
fi

# Run PROGRAM as a child, passing TERM and INT on to it (one that comes while
# the child is still being started can be missed), and exit with its status,
# unless that is 0: then idle until the pod is deleted. `current` is the
# process a signal is passed to: the program, later the idle sleep.
terminating=false
interrupted=false
current=
trap 'terminating=true interrupted=true
      if [ -n "$current" ]; then kill -TERM "$current" 2>/dev/null || :; fi' TERM INT
"$@" &
current=$!
program=$current
# A signal that came before `current` named the program stopped nothing.
if [ "$terminating" = true ]; then kill -TERM "$program" 2>/dev/null || :; fi
status=
while :; do
  interrupted=false
  code=0
  wait "$program" || code=$?
  # 127: the previous wait already returned the program's status.
  if [ "$code" -eq 127 ] && [ -n "$status" ]; then break; fi
  status=$code
  # A trapped signal also ends the wait; then wait again for the program,
  # which is shutting down, and take its own exit status.
  [ "$interrupted" = true ] || break
done
[ "$status" -eq 0 ] || exit "$status"

# Idle. A signal now ends the script at once, and the sleep with it (best
# effort: a sleep that is not yet running misses the kill; the end of the
# container stops it in any case).
trap 'kill "$current" 2>/dev/null || :; exit 0' TERM INT
[ "$terminating" = false ] || exit 0
echo "$me: $1 finished (exit status 0); idle until the pod is deleted" >&2
while :; do
  sleep 3600 &
  current=$!
  wait "$current" || :
done
