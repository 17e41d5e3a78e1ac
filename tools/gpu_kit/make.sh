#!/usr/bin/env bash
# Makes the GPU kit: everything a bare CUDA machine (driver, CUDA 13
# runtime/cuBLAS/NCCL, Python; no Bazel, none of our Debian packages) needs
# to run the GPU tests, checks and benchmarks, in one folder.
#
#   bash tools/gpu_kit/make.sh [DIR]      (default DIR: gpu-kit, git-ignored)
#
# Builds with --config=cuda every test tagged `gpu`, gpu_check, gpu_bench,
# bench and the binaries of a training job (ps_server, worker, launch,
# gen_data), then tools/gpu_kit/make_kit.py copies them with the shared
# libraries a bare machine lacks into DIR. On the GPU machine:
#
#   bash DIR/run.sh OUT [--only PARTS]
#
# See docs/gpu.md, "Running on a GPU machine".
set -euo pipefail
# DIR is taken relative to where the command is typed; the default is the
# repository's gpu-kit/.
if [ $# -gt 0 ]; then
  case "$1" in /*) kit_dir="$1" ;; *) kit_dir="$PWD/$1" ;; esac
fi
cd "$(dirname "$0")/../.."
kit_dir="${kit_dir:-$PWD/gpu-kit}"

bash tools/setup.sh

# Tag `gpu` exactly (not e.g. "gpu_slow"): the same filter as
# `bazel test --test_tag_filters=gpu`.
mapfile -t gpu_tests < <(bazel query --noshow_progress \
  'attr(tags, "\bgpu\b", tests(//...))' 2>/dev/null)
if [ ${#gpu_tests[@]} -eq 0 ]; then
  echo "make.sh: bazel query found no test tagged gpu" >&2
  exit 1
fi
binaries=(//tools/gpu_check //bench:gpu_bench //bench //ps_server //worker
  //deploy:launch //tools/gen_data)

echo "== building with --config=cuda: ${#gpu_tests[@]} gpu tests and ${binaries[*]}"
bazel build --config=cuda --noshow_progress "${binaries[@]}" "${gpu_tests[@]}"
bazel_bin="$(bazel info --config=cuda bazel-bin 2>/dev/null)"

# Each gpu test's `args` (e.g. a --gtest_filter) travel in the manifest.
tests_xml="$(mktemp -t distrt-gpu-tests.XXXXXX.xml)"
trap 'rm -f "$tests_xml"' EXIT
bazel query --noshow_progress --output=xml \
  "set(${gpu_tests[*]})" >"$tests_xml" 2>/dev/null

echo "== assembling the kit in $kit_dir"
python3 tools/gpu_kit/make_kit.py --bazel_bin="$bazel_bin" \
  --kit_dir="$kit_dir" --tests_xml="$tests_xml" \
  --commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
  "${binaries[@]}"
