#!/usr/bin/env bash
# Builds launch, ps_server and worker, then runs launch: a whole training job
# on this machine (ps tasks, chief, workers, evaluator), each task's output
# prefixed with its name, every process stopped when the job ends.
#
#   deploy/launch.sh --ps=2 --workers=2 --chief -- \
#     --model=logreg --train_data=DATA --train_steps=1000
#
# Arguments go to launch unchanged (see deploy/launch.sh --help); relative
# paths in them are relative to the directory this is run from.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# In a subshell: only the build runs in the repository root.
(
  cd "$repo"
  bash tools/setup.sh
  # Quiet unless it fails; a failed build must not run a stale binary.
  if ! build_log=$(bazel build //deploy:launch //ps_server //worker 2>&1); then
    grep -E '^ERROR' <<<"$build_log" >&2 || true
    echo "launch.sh: the build failed" >&2
    exit 1
  fi
)
launch="$repo/bazel-bin/deploy/launch"
[ -x "$launch" ] || { echo "launch.sh: build failed: $launch is missing" >&2; exit 1; }
exec "$launch" "$@"
