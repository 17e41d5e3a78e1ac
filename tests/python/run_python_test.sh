#!/usr/bin/env bash
# Runs a Python test with Debian's interpreter, which has python3-grpcio and
# python3-protobuf (a python3 earlier on PATH, e.g. from pyenv, may not).
set -euo pipefail
# Under tools/tsan_test.sh, LD_LIBRARY_PATH holds Abseil built with
# ThreadSanitizer (also named by DISTRT_TSAN_ABSEIL_LIB), for our binaries.
# The interpreter is not built with TSan and cannot load it (libtsan must
# come first), so it runs without; the test gives it to the ps_server
# processes it starts.
if [ -n "${DISTRT_TSAN_ABSEIL_LIB:-}" ]; then
  unset LD_LIBRARY_PATH
fi
exec /usr/bin/python3 "$@"
