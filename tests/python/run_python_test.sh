#!/usr/bin/env bash
# Runs a Python test with Debian's interpreter, which has python3-grpcio and
# python3-protobuf (a python3 earlier on PATH, e.g. from pyenv, may not).
set -euo pipefail
# Under tools/tsan_test.sh, LD_LIBRARY_PATH points at Abseil built with
# ThreadSanitizer, for our binaries. The interpreter is not built with TSan
# and cannot load it (libtsan must come first), so the test hands it on to
# the ps_server processes it starts instead.
if [ -n "${LD_LIBRARY_PATH:-}" ]; then
  export DISTRT_CHILD_LD_LIBRARY_PATH="$LD_LIBRARY_PATH"
  unset LD_LIBRARY_PATH
fi
exec /usr/bin/python3 "$@"
