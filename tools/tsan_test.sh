#!/usr/bin/env bash
# `bazel test --config=tsan` with Abseil built with ThreadSanitizer loaded
# into the test processes (and the ps_server/worker processes they start)
# instead of Debian's, so that TSan sees absl::Mutex; see tools/tsan_abseil.sh.
# Arguments go to `bazel test` (default //...).
#
# Only the tests get LD_LIBRARY_PATH (--test_env): build tools such as
# grpc_cpp_plugin link Debian's Abseil too and must keep it.
set -euo pipefail
cd "$(dirname "$0")/.."

lib="$(bash tools/tsan_abseil.sh)"
[ $# -gt 0 ] || set -- //...
exec bazel test --config=tsan --test_env=LD_LIBRARY_PATH="$lib" "$@"
