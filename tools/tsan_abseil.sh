#!/usr/bin/env bash
# Builds the Abseil that Debian installed (libabsl-dev: same version, same
# Debian patches, same options.h, so the same ABI and sonames) once more with
# -fsanitize=thread, and prints the directory of its shared libraries on
# stdout (everything else goes to stderr).
#
# Why: Debian's libabsl is not built with ThreadSanitizer, so TSan cannot see
# absl::Mutex (its annotations compile in only under -fsanitize=thread) and
# reports every access to a field that a Mutex guards as a race. Loading
# this build instead, through LD_LIBRARY_PATH for test processes only (see
# tools/tsan_test.sh), makes those locks visible. Debian's gRPC, Gloo and
# OpenSSL stay uninstrumented (tools/sanitizers/tsan_suppressions.cc).
#
# The sources come from Debian's archive: the first deb.debian.org-style
# mirror in apt's sources (deb.debian.org otherwise), then the security
# archive. The result is kept under
# ${DISTRT_TSAN_ABSEIL_DIR:-~/.cache/distrt-tsan-abseil}/<key>, the key
# naming the Abseil version, the compiler and this script; a second run only
# prints the path. Concurrent runs are serialised by a lock.
set -euo pipefail
exec 3>&1 1>&2  # stdout is for the result only

version="$(dpkg-query -W -f='${Version}' libabsl-dev 2>/dev/null)" || {
  echo "tsan_abseil: libabsl-dev is not installed (run tools/setup.sh)"
  exit 1
}
upstream="${version%-*}"   # 20220623.1-1+deb12u2 -> 20220623.1
upstream="${upstream#*:}"  # without an epoch
revision="${version#*:}"
script_hash="$(sha256sum "$0" | cut -c1-12)"
key="${revision}-gcc$(g++ -dumpfullversion)-${script_hash}"
cache="${DISTRT_TSAN_ABSEIL_DIR:-$HOME/.cache/distrt-tsan-abseil}"
root="$cache/$key"
mkdir -p "$cache"
exec 4>"$cache/.lock"
flock 4
if [ -f "$root/.complete" ]; then
  echo "$root/lib" >&3
  exit 0
fi

# The archive roots apt uses ("URIs:" of deb822 sources, "deb URI ..."
# lines of sources.list), falling back to deb.debian.org.
apt_uris() {
  cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
    sed -n 's/^URIs:[[:space:]]*//p' | tr ' ' '\n' || true
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
    sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]*\).*/\2/p' ||
    true
}
mirror="$(apt_uris | grep -E '^https?://.*/debian/?$' | head -n1 || true)"
security="$(apt_uris | grep -E '^https?://.*/debian-security/?$' | head -n1 || true)"
mirror="${mirror%/}"
security="${security%/}"
pools=("${mirror:-http://deb.debian.org/debian}/pool/main/a/abseil"
  "${security:-http://deb.debian.org/debian-security}/pool/updates/main/a/abseil")

work="$(mktemp -d -t distrt-tsan-abseil.XXXXXX)"
trap 'rm -rf "$work" "$root.partial"' EXIT

fetch() {
  local pool
  for pool in "${pools[@]}"; do
    echo "tsan_abseil: fetching $pool/$1"
    if curl --fail --silent --location --max-time 300 -o "$work/$1" \
      "$pool/$1"; then
      return 0
    fi
  done
  echo "tsan_abseil: $1 is in none of ${pools[*]}" \
    "(a superseded Debian revision leaves the pool; upgrade libabsl-dev)"
  return 1
}
fetch "abseil_${upstream}.orig.tar.gz"
fetch "abseil_${revision}.debian.tar.xz"

src="$work/abseil-$upstream"
mkdir -p "$src"
tar -xzf "$work/abseil_${upstream}.orig.tar.gz" -C "$src" --strip-components=1
tar -xJf "$work/abseil_${revision}.debian.tar.xz" -C "$src"
if [ -f "$src/debian/patches/series" ]; then
  while read -r patch options || [ -n "$patch" ]; do
    case "$patch" in "" | "#"*) continue ;; esac
    # shellcheck disable=SC2086 # options such as -p0 are words
    patch -d "$src" ${options:--p1} --quiet <"$src/debian/patches/$patch"
  done <"$src/debian/patches/series"
fi

echo "tsan_abseil: building Abseil $version with -fsanitize=thread"
# As debian/rules configures its shared build, plus TSan. Installed beside
# the cache entry, then moved into place, so that no run ever sees half.
rm -rf "$root.partial"
cmake -S "$src" -B "$work/build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_STANDARD=17 \
  -DBUILD_SHARED_LIBS=ON -DABSL_PROPAGATE_CXX_STD=ON \
  -DCMAKE_CXX_FLAGS="-fsanitize=thread" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=thread" \
  -DCMAKE_INSTALL_LIBDIR=lib \
  -DCMAKE_INSTALL_PREFIX="$root" >"$work/cmake.log" 2>&1 ||
  { cat "$work/cmake.log"; exit 1; }
DESTDIR="$root.partial" ninja -C "$work/build" install >"$work/build.log" 2>&1 ||
  { tail -n 50 "$work/build.log"; exit 1; }
rm -rf "$root"
mv -T "$root.partial$root" "$root"
touch "$root/.complete"
echo "$root/lib" >&3
