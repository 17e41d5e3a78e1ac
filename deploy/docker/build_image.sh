#!/usr/bin/env bash
# Builds the distrt image with no registry at hand: the base is made here,
# by debootstrap from Debian's archive (minbase, Debian 12, with the runtime
# packages that deploy/docker/Dockerfile's runtime stage installs), then
# `docker import`ed; `docker build -f Dockerfile.prebuilt` then puts the
# binaries of this checkout's Bazel build (opt) on it.
#
#   deploy/docker/build_image.sh [TAG]          # default distrt:latest
#
# Needs root (debootstrap), docker and debootstrap (tools/setup.sh installs
# both). Environment:
#   DOCKER_HOST              the daemon, as docker reads it
#   DISTRT_IMAGE_BINARIES    a directory that already holds the programs
#                            (ps_server, worker, distctl, gen_data,
#                            libdistrt_torchscript.so); default: build them
#   DISTRT_DOCKER_CACHE      keeps the base's root file system as a tarball
#                            between runs (default ~/.cache/distrt-docker)
#   DEBIAN_MIRROR            default http://deb.debian.org/debian
# With a registry reachable, `docker build -f deploy/docker/Dockerfile .`
# builds the same image from source instead (docs/kubernetes.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
tag=${1:-distrt:latest}

for tool in docker debootstrap; do
  command -v "$tool" >/dev/null || {
    echo "build_image: $tool is missing (tools/setup.sh installs it)" >&2
    exit 2
  }
done

# The one list of runtime packages: the Dockerfile's.
packages=$(sed -n '/apt-get install -y --no-install-recommends/,/rm -rf/p' \
  deploy/docker/Dockerfile | sed -n 's/^ *\(lib[a-z0-9.+-]*\).*/\1/p' |
  sort | paste -sd, -)
[ -n "$packages" ] || {
  echo "build_image: no runtime packages found in deploy/docker/Dockerfile" >&2
  exit 2
}
key=$(echo "bookworm minbase $packages" | md5sum | cut -c1-12)
base="distrt-base:$key"

work=$(mktemp -d -t distrt-image.XXXXXX)
cleanup() {
  # debootstrap mounts these while it configures; never delete through them.
  for mount in proc sys dev/pts dev; do
    if mountpoint -q "$work/root/$mount" 2>/dev/null; then
      umount "$work/root/$mount" || return
    fi
  done
  rm -rf "$work"
}
trap cleanup EXIT

if docker image inspect "$base" >/dev/null 2>&1; then
  echo "build_image: base image $base is there"
else
  cache=${DISTRT_DOCKER_CACHE:-$HOME/.cache/distrt-docker}
  tarball="$cache/base-$key.tar"
  if [ ! -f "$tarball" ]; then
    mkdir -p "$cache"
    echo "build_image: debootstrap of Debian 12 (minbase) with $packages"
    started=$SECONDS
    debootstrap --variant=minbase --include="$packages" bookworm \
      "$work/root" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" \
      >"$work/debootstrap.log" 2>&1 || {
      tail -n 20 "$work/debootstrap.log" >&2
      echo "build_image: debootstrap failed (log above)" >&2
      exit 1
    }
    rm -rf "$work/root/var/lib/apt/lists/"* "$work/root/var/cache/apt/archives/"*.deb
    tar -C "$work/root" -cf "$tarball.tmp" .
    mv "$tarball.tmp" "$tarball"
    rm -rf "$work/root"
    echo "build_image: base root file system made in $((SECONDS - started)) s ($(du -h "$tarball" | cut -f1))"
  fi
  docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    "$tarball" "$base" >/dev/null
  echo "build_image: imported $base"
fi

mkdir -p "$work/context/bin"
if [ -n "${DISTRT_IMAGE_BINARIES:-}" ]; then
  bin=$DISTRT_IMAGE_BINARIES
  programs=(ps_server worker distctl gen_data libdistrt_torchscript.so)
  sources=("${programs[@]/#/$bin/}")
else
  bazel build -c opt //ps_server //worker //client:distctl //tools/gen_data \
    //runtime/torchscript:libdistrt_torchscript.so
  bin=$(bazel info -c opt bazel-bin)
  sources=("$bin/ps_server/ps_server" "$bin/worker/worker"
    "$bin/client/distctl" "$bin/tools/gen_data/gen_data"
    "$bin/runtime/torchscript/libdistrt_torchscript.so")
fi
cp -L "${sources[@]}" "$work/context/bin/"
install -m 0755 deploy/kubernetes/tf_config_from_ordinal.sh "$work/context/bin/"
docker build -q -f deploy/docker/Dockerfile.prebuilt --build-arg BASE="$base" \
  -t "$tag" "$work/context" >/dev/null
echo "build_image: built $tag"
