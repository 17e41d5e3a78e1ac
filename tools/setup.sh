#!/usr/bin/env bash
# Installs every Debian package that the build, the main job and the tests
# need. Idempotent and non-interactive; prints nothing when all is present.
set -euo pipefail

packages=(
  bazel-bootstrap        # Bazel 4.2.3: the build
  bazel-rules-java       # local stand-in for @rules_java (no internet)
  g++ pkg-config
  clang libclang-rt-14-dev                   # libFuzzer targets (fuzz/, --config=fuzz)
  prometheus             # promtool checks the /metrics exposition (tests)
  cmake ninja-build patch curl xz-utils      # tools/tsan_abseil.sh (--config=tsan)
  protobuf-compiler libprotobuf-dev          # messages in proto/
  protobuf-compiler-grpc libgrpc++-dev       # RPC between processes
  libabsl-dev            # Status, flags, strings, Mutex
  nlohmann-json3-dev     # TF_CONFIG and cluster-spec JSON
  libeigen3-dev          # CPU math of the models
  libgloo-dev            # CPU collectives across workers
  libgtest-dev libgmock-dev googletest       # unit and integration tests
  libbenchmark-dev       # bench/
  libssl-dev             # TLS files checked, local CA made (libcrypto)
  libmicrohttpd-dev      # Prometheus /metrics endpoint (runtime/metrics)
  libisal-dev            # CRC32C of checkpoint tensors and TFRecord framing (ISA-L crc32_iscsi)
  zlib1g-dev             # GZIP-compressed TFRecord files (runtime/input)
  libfarmhash-dev        # Fingerprint64, TF's string hash for hash_bucket features
  liblinear-tools        # bench/: time_to_accuracy's baseline (liblinear-train)
  python3-grpcio python3-protobuf            # cross-language client test
  python3-yaml           # Kubernetes manifests test (deploy/kubernetes)
  libtorch-dev           # TorchScript models (runtime/torchscript): load, autograd
  python3-torch          # writes TorchScript modules (examples, tests)
  python3-numpy          # examples/export/read_export.py (its test)
  slurm-client           # sbatch, srun, scontrol: the Slurm job test, host lists
  slurmctld slurmd munge # a one-node Slurm cluster for tests/slurm_job_test
  iptables               # network faults between test namespaces (tests/netns)
  docker.io debootstrap  # the image built for real (deploy/docker/build_image.sh)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
