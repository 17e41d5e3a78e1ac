#!/usr/bin/env bash
# The main job on one machine: a local cluster training a model.
#
# Sets up and builds, generates a synthetic click-prediction dataset (LIBSVM,
# with a known ground truth), then runs `launch`: two ps_server tasks, a
# chief, two workers and an evaluator as separate processes on 127.0.0.1,
# each with its TF_CONFIG, training logistic regression with
# ParameterServerStrategy. Every output line is prefixed with its task
# ([worker:1]); the chief prints progress, checkpoints, evaluates, writes
# metrics.json and stops the ps tasks; the evaluator evaluates each
# checkpoint. Ends by checking the eval accuracy against its target.
#
#   deploy/run_local.sh [CLUSTER_SPEC_JSON] [-- WORKER_FLAGS...]
#     default: --ps=2 --workers=2 --chief --evaluator
#
# The job dir (logs, tasks.json, checkpoints, TensorBoard summaries,
# metrics) is kept; its path is printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
cluster=(--ps=2 --workers=2 --chief --evaluator)
if [ $# -gt 0 ] && [ "$1" != "--" ]; then cluster=(--cluster_spec="$1"); shift; fi
[ "${1:-}" = "--" ] && shift
extra_flags=("$@")
target_accuracy=0.85

bash tools/setup.sh
echo "== building ps_server, worker, launch, distctl and gen_data"
if ! build_log=$(bazel build //ps_server //worker //deploy:launch \
    //client:distctl //tools/gen_data 2>&1); then
  grep -E '^ERROR' <<<"$build_log" >&2 || true
  echo "the build failed" >&2
  exit 1
fi

job_dir=$(mktemp -d -t distrt-job.XXXXXX)
echo "== generating data"
bazel-bin/tools/gen_data/gen_data --task=binary --rows=100000 --features=2000 \
  --features_per_row=20 --noise=0.05 --eval_fraction=0.2 --seed=7 \
  --out_dir="$job_dir/data" --prefix=ctr

echo "== training logreg (launch ${cluster[*]})"
bazel-bin/deploy/launch "${cluster[@]}" --job_dir="$job_dir" -- \
  --model=logreg --train_data="$job_dir/data/ctr.train.svm" \
  --eval_data="$job_dir/data/ctr.eval.svm" --train_steps=3000 \
  --global_batch_size=128 --optimizer=adagrad --learning_rate=0.1 \
  --num_cpu_replicas=2 --checkpoint_every_steps=500 --log_every_secs=1 \
  "${extra_flags[@]}"

echo "== checkpoints ($job_dir/checkpoints)"
grep -v '^#' "$job_dir/checkpoints/checkpoints"
echo "== final metrics ($job_dir/metrics.json)"
cat "$job_dir/metrics.json"
echo "== job dir $job_dir: logs/, tasks.json, summaries/ (tensorboard --logdir $job_dir/summaries)"
python3 - "$job_dir/metrics.json" "$target_accuracy" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
target = float(sys.argv[2])
accuracy = m["eval_accuracy"]
ok = accuracy is not None and accuracy >= target
print("== eval accuracy %.4f (target %.2f): %s" % (accuracy or 0, target, "reached" if ok else "NOT reached"))
sys.exit(0 if ok else 1)
PY
