#!/usr/bin/env bash
# `bazel test --config=tsan` with Abseil built with ThreadSanitizer loaded
# into the test processes (and the ps_server/worker processes they start)
# instead of Debian's, so that TSan sees absl::Mutex; see tools/tsan_abseil.sh.
# Arguments go to `bazel test`; without a target, //... is tested.
#
# Only the tests get LD_LIBRARY_PATH (--test_env): build tools such as
# grpc_cpp_plugin link Debian's Abseil too and must keep it. Tests that run
# a program without TSan (a Python interpreter) find the same directory in
# DISTRT_TSAN_ABSEIL_LIB, to take it out of their own LD_LIBRARY_PATH.
set -euo pipefail
cd "$(dirname "$0")/.."

lib="$(bash tools/tsan_abseil.sh)"
has_target=false
for arg in "$@"; do
  case "$arg" in //* | :* | @*) has_target=true ;; esac
done
$has_target || set -- "$@" //...
exec bazel test --config=tsan --test_env=LD_LIBRARY_PATH="$lib" \
  --test_env=DISTRT_TSAN_ABSEIL_LIB="$lib" "$@"
