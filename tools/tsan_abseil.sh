#!/usr/bin/env bash
# Builds the Abseil that Debian installed (libabsl-dev: same version, same
# Debian patches, same options.h, so the same ABI and sonames) once more with
# -fsanitize=thread, and prints the directory of its shared libraries.
#
# Why: Debian's libabsl is not built with ThreadSanitizer, so TSan cannot see
# absl::Mutex (its annotations compile in only under -fsanitize=thread) and
# reports every access to a field that a Mutex guards as a race. Loading
# this build instead, through LD_LIBRARY_PATH for test processes only (see
# tools/tsan_test.sh), makes those locks visible. Debian's gRPC and OpenSSL
# stay uninstrumented; reports from inside them are suppressed
# (tools/sanitizers/tsan_suppressions.cc).
#
# The sources come from Debian's archive (the same mirror apt uses), so no
# other network access is needed. The result is kept under
# ${DISTRT_TSAN_ABSEIL_DIR:-~/.cache/distrt-tsan-abseil}/<version>; a second
# run only prints the path. Progress goes to stderr.
set -euo pipefail

version="$(dpkg-query -W -f='${Version}' libabsl-dev 2>/dev/null)" || {
  echo "tsan_abseil: libabsl-dev is not installed (run tools/setup.sh)" >&2
  exit 1
}
upstream="${version%-*}"  # 20220623.1-1+deb12u2 -> 20220623.1
upstream="${upstream#*:}"  # without an epoch
root="${DISTRT_TSAN_ABSEIL_DIR:-$HOME/.cache/distrt-tsan-abseil}/$version"
if [ -f "$root/.complete" ]; then
  echo "$root/lib"
  exit 0
fi

mirror="$(sed -n 's/^URIs: *\([^ ]*\/debian\)\/*$/\1/p' \
  /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)"
mirror="${mirror:-http://deb.debian.org/debian}"
security="$(sed -n 's/^URIs: *\([^ ]*\/debian-security\)\/*$/\1/p' \
  /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)"
security="${security:-http://deb.debian.org/debian-security}"
# A security update lives in the security archive's pool.
pools=("$mirror/pool/main/a/abseil" "$security/pool/updates/main/a/abseil")
work="$(mktemp -d -t distrt-tsan-abseil.XXXXXX)"
trap 'rm -rf "$work"' EXIT

fetch() {
  local pool
  for pool in "${pools[@]}"; do
    echo "tsan_abseil: fetching $pool/$1" >&2
    curl --fail --silent --location --max-time 300 -o "$work/$1" \
      "$pool/$1" && return 0
  done
  echo "tsan_abseil: $1 is in none of ${pools[*]}" >&2
  return 1
}
fetch "abseil_${upstream}.orig.tar.gz"
fetch "abseil_${version#*:}.debian.tar.xz"

src="$work/abseil-$upstream"
mkdir -p "$src"
tar -xzf "$work/abseil_${upstream}.orig.tar.gz" -C "$src" --strip-components=1
tar -xJf "$work/abseil_${version#*:}.debian.tar.xz" -C "$src"
if [ -f "$src/debian/patches/series" ]; then
  while read -r patch; do
    case "$patch" in "" | "#"*) continue ;; esac
    patch -d "$src" -p1 --quiet <"$src/debian/patches/$patch"
  done <"$src/debian/patches/series"
fi

echo "tsan_abseil: building Abseil $version with -fsanitize=thread" >&2
# As debian/rules configures its shared build, plus TSan.
cmake -S "$src" -B "$work/build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_STANDARD=17 \
  -DBUILD_SHARED_LIBS=ON -DABSL_PROPAGATE_CXX_STD=ON \
  -DCMAKE_CXX_FLAGS="-fsanitize=thread" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=thread" \
  -DCMAKE_INSTALL_PREFIX="$root" >"$work/cmake.log" 2>&1 ||
  { cat "$work/cmake.log" >&2; exit 1; }
ninja -C "$work/build" install >"$work/build.log" 2>&1 ||
  { tail -n 50 "$work/build.log" >&2; exit 1; }
[ -d "$root/lib" ] || ln -s "$(basename "$(ls -d "$root"/lib*/ | head -n1)")" "$root/lib"
touch "$root/.complete"
echo "$root/lib"
