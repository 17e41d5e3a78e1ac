#!/usr/bin/env bash
# Runs a Python test with Debian's interpreter, which has python3-grpcio and
# python3-protobuf (a python3 earlier on PATH, e.g. from pyenv, may not).
set -euo pipefail
exec /usr/bin/python3 "$@"
