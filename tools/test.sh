#!/usr/bin/env bash
# The README's test command: installs what is missing, builds and runs every
# test with `bazel test //...`, prints the logs of failed tests, and ends with
# the line "N passed, N failed" counting test cases. Exits non-zero on any
# failure. Extra arguments go to `bazel test` (e.g. --config=asan).
set -uo pipefail
cd "$(dirname "$0")/.."

bash tools/setup.sh || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }

events=$(mktemp -t distrt-bep.XXXXXX.json)
trap 'rm -f "$events"' EXIT

bazel test //... --keep_going --build_event_json_file="$events" "$@"
bazel_status=$?

python3 tools/summarize_tests.py "$events"
summary_status=$?

if [ "$bazel_status" -ne 0 ] || [ "$summary_status" -ne 0 ]; then
  exit 1
fi
