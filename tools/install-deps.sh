#!/usr/bin/env bash
# Installs every Debian package popc needs to build, test and benchmark.
# The single list of dependencies: README commands and .ci/run both call this.
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build pkg-config ccache
  # LLVM 19: codegen (IRBuilder) and runtime JIT (ORC); clang-19 for fuzzers
  llvm-19-dev libzstd-dev clang-19 libclang-rt-19-dev
  # FileCheck-19 and not: the golden IR tests (test/filecheck)
  llvm-19-tools
  # ONNX import
  libonnx-dev libprotobuf-dev protobuf-compiler
  # formats: flatbuffers (popef), libzip + zlib (npz), xxhash (content hashes)
  libflatbuffers-dev flatbuffers-compiler libzip-dev zipcmp zipmerge ziptool zlib1g-dev libxxhash-dev
  # CLI, logging, formatting, JSON, HTTP
  libcli11-dev libfmt-dev libspdlog-dev nlohmann-json3-dev libcurl4-openssl-dev
  # MPI instances (poprun-lite under mpirun, docs/distributed.md)
  openmpi-bin libopenmpi-dev
  # tests
  catch2 libonnx-testdata
  # remote-cache tests: a local WebDAV server
  nginx-core
  # HTML profile report tests: a real headless browser
  chromium
  # model generation and reference outputs (used by /usr/bin/python3 only)
  python3 python3-onnx python3-numpy python3-torch python3-torchvision
  # reading the report screenshots in the Chromium tests
  python3-pil
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
