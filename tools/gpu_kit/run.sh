#!/usr/bin/env bash
# Runs the GPU kit on this machine: set-up (finds the CUDA libraries), the
# gpu tests, gpu_check, GPU training jobs against the same jobs on CPU,
# gpu_bench, PyTorch on the same GPU, and the CPU benchmarks; writes
# OUT/summary.json and OUT/summary.txt.
#
#   bash run.sh OUT [--only PARTS] [--skip PARTS] [--quick] [--python PY]
#               [--allow_no_gpu] [--deadline_secs S]
#
# PARTS: tests,gpu_check,training,gpu_bench,torch,cpu_bench (default: all).
# Exit status: 0 nothing failed, 1 a part failed or did not run in time,
# 2 set-up failed (a CUDA library missing or of another major version, a
# binary that would not start, GPUs that CUDA cannot use, or no GPU without
# --allow_no_gpu), 128+N stopped by signal N. Needs python3 (the standard
# library only). Made by tools/gpu_kit/make.sh; see docs/gpu.md.
set -euo pipefail
kit_dir="$(cd "$(dirname "$0")" && pwd)"
if ! command -v python3 >/dev/null; then
  echo "run.sh: python3 is needed to run the kit and there is none on PATH" >&2
  exit 2
fi
# No __pycache__ in the kit: it may be read-only, and stays as it was made.
PYTHONDONTWRITEBYTECODE=1 exec python3 "$kit_dir/kit_run.py" \
  --kit_dir="$kit_dir" "$@"
