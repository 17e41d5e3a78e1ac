#!/usr/bin/env bash
# Builds examples/out_of_tree as a workspace of its own, with distrt as a
# local_repository, and runs its program: a change that breaks the public
# surface for code outside the repository fails here. CI runs it
# (.ci/run); needs tools/setup.sh's packages. Uses an output base of its
# own (an output base belongs to one workspace) and leaves no symlinks in
# the source tree.
set -euo pipefail
cd "$(dirname "$0")"
output_base="${HOME}/.cache/distrt-out-of-tree-$(pwd | md5sum | cut -c1-12)"
bazel --output_base="$output_base" build --symlink_prefix=/ //:mirrored_sum
bin="$(bazel --output_base="$output_base" info bazel-bin 2>/dev/null)"
"$bin/mirrored_sum"
bazel --output_base="$output_base" shutdown
