#!/usr/bin/env bash
# One task of a Slurm job step (srun runs it once per task): asks distctl
# which task Slurm's environment makes it (TF's SlurmClusterResolver rules,
# docs/tf_config.md "Under Slurm") and becomes that task's binary.
#
#   srun deploy/slurm/task.sh BIN_DIR JOB_DIR -- TRAINING_FLAGS...
#
# BIN_DIR holds ps_server/ps_server, worker/worker and client/distctl
# (bazel-bin); JOB_DIR, on a file system every node sees, gets the
# checkpoints, summaries and metrics.json. DISTRT_SLURM_JOBS
# (e.g. chief:1,ps:2,worker:2) and DISTRT_SLURM_PORT_BASE (default 8888)
# become --slurm_jobs and --slurm_port_base.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: task.sh BIN_DIR JOB_DIR -- TRAINING_FLAGS..." >&2
  exit 2
fi
bin=$1
job_dir=$2
shift 2
[ "${1:-}" = "--" ] && shift
: "${DISTRT_SLURM_JOBS:?set DISTRT_SLURM_JOBS, e.g. chief:1,ps:2,worker:2}"
slurm_flags=(--slurm_jobs="$DISTRT_SLURM_JOBS"
             --slurm_port_base="${DISTRT_SLURM_PORT_BASE:-8888}")

# distctl resolve prints one key per line: '  "task_type": "ps",'.
resolved=$("$bin/client/distctl" resolve "${slurm_flags[@]}")
task_type=$(sed -n 's/^  "task_type": "\([a-z]*\)",$/\1/p' <<<"$resolved")
source=$(sed -n 's/^  "source": "\([A-Za-z_]*\)",\{0,1\}$/\1/p' <<<"$resolved")
if [ "$source" != "Slurm" ]; then
  echo "task.sh: the cluster came from ${source:-nowhere}, not Slurm" \
       "(is TF_CONFIG set, or is this not an srun step?)" >&2
  exit 2
fi

case "$task_type" in
  ps)
    exec "$bin/ps_server/ps_server" "${slurm_flags[@]}" \
      --checkpoint_dir="$job_dir/checkpoints"
    ;;
  chief | worker | evaluator)
    exec "$bin/worker/worker" "${slurm_flags[@]}" \
      --checkpoint_dir="$job_dir/checkpoints" \
      --log_dir="$job_dir/summaries" --metrics_out="$job_dir/metrics.json" \
      "$@"
    ;;
  *)
    echo "task.sh: distctl resolve gave no task type:" >&2
    echo "$resolved" >&2
    exit 2
    ;;
esac
