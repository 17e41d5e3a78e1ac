#!/usr/bin/env bash
# Runs every libFuzzer binary in a directory for a while, each on a copy of
# its seed corpus, two at a time, and says which found a crash.
#
#   bash fuzz/run_fuzzers.sh BIN_DIR [SECONDS]
#
# BIN_DIR holds the fuzz targets built with libFuzzer (bazel-bin/fuzz after
# `bazel build --config=fuzz //fuzz:all`): every executable named
# *_fuzzer there is run. SECONDS (default 60) is each one's
# -max_total_time. The seed corpus of X_fuzzer is fuzz/corpus/X beside this
# script; it is copied to a scratch directory first, so the checked-in one
# never changes. Environment: FUZZ_JOBS (default 2) fuzzers at a time;
# FUZZ_ARGS, more libFuzzer flags; KEEP_WORKDIR=1 keeps the scratch
# directory (with the grown corpora) even when nothing failed.
#
# Prints one line per fuzzer (name, inputs run, result) and, for a failure,
# the input that caused it and the log. Exits 1 when any fuzzer failed
# (crash, timeout, out of memory, leak), 2 on a usage error.

set -u -o pipefail

usage() {
  echo "usage: $0 BIN_DIR [SECONDS]" >&2
  exit 2
}

[[ $# -ge 1 && $# -le 2 ]] || usage
bin_dir=$1
seconds=${2:-60}
[[ -d $bin_dir ]] || { echo "$0: $bin_dir is not a directory" >&2; exit 2; }
[[ $seconds =~ ^[1-9][0-9]*$ ]] || { echo "$0: bad SECONDS: $seconds" >&2; exit 2; }
jobs=${FUZZ_JOBS:-2}
corpus_root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/corpus

fuzzers=()
for path in "$bin_dir"/*_fuzzer; do
  [[ -f $path && -x $path ]] && fuzzers+=("$path")
done
if [[ ${#fuzzers[@]} -eq 0 ]]; then
  echo "$0: no *_fuzzer executables in $bin_dir" >&2
  exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/distrt_fuzz_run.XXXXXX")
# The targets' scratch files (checkpoints written and read every run) go to
# memory when /dev/shm is there: on a disk, their fsyncs would dominate.
if [[ -d /dev/shm && -w /dev/shm ]]; then
  scratch=$(mktemp -d /dev/shm/distrt_fuzz_run.XXXXXX)
else
  scratch=$work/scratch
fi
trap 'rm -rf "$scratch"' EXIT

# Runs one fuzzer; writes its summary line to $work/<name>/result and
# returns non-zero when it failed.
run_one() {
  local binary=$1
  local name
  name=$(basename "$binary")
  local dir=$work/$name
  local seeds=$corpus_root/${name%_fuzzer}
  mkdir -p "$dir/corpus" "$dir/artifacts" "$scratch/$name"
  if [[ -d $seeds ]]; then
    cp -R "$seeds/." "$dir/corpus/"
  else
    echo "$0: warning: no seed corpus $seeds for $name" >&2
  fi
  local status=0
  # TEST_TMPDIR: where the targets make their scratch directories, so that
  # a crashed run leaves nothing behind.
  # shellcheck disable=SC2086  # FUZZ_ARGS is a list of flags
  TEST_TMPDIR=$scratch/$name "$binary" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$dir/artifacts/" ${FUZZ_ARGS:-} "$dir/corpus" \
    >"$dir/log" 2>&1 || status=$?
  local runs
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
  runs=${runs:-?}
  local rate="?"
  [[ $runs =~ ^[0-9]+$ ]] && rate=$((runs / seconds))
  local result="ok"
  if [[ $status -ne 0 ]]; then
    local artifacts
    artifacts=$(find "$dir/artifacts" -type f | paste -sd ' ' -)
    result="FAILED (exit $status): input ${artifacts:-none saved}; log $dir/log"
  fi
  printf '%-28s runs %-10s (%s/s)  %s\n' "$name" "$runs" "$rate" "$result" \
    >"$dir/result"
  return "$status"
}

failed=0
running=0
pending=("${fuzzers[@]}")
while [[ ${#pending[@]} -gt 0 || $running -gt 0 ]]; do
  while [[ ${#pending[@]} -gt 0 && $running -lt $jobs ]]; do
    run_one "${pending[0]}" &
    pending=("${pending[@]:1}")
    running=$((running + 1))
  done
  wait -n || failed=1
  running=$((running - 1))
done

for binary in "${fuzzers[@]}"; do
  cat "$work/$(basename "$binary")/result"
done
if [[ $failed -ne 0 || ${KEEP_WORKDIR:-0} == 1 ]]; then
  echo "work directory (corpora, logs, failing inputs): $work"
else
  rm -rf "$work"
fi
exit "$failed"
