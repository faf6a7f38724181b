#!/usr/bin/env bash
# Installs the Debian packages planner needs. Idempotent: installs only what is missing.
# Works as root; uses sudo otherwise.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git ccache   # ccache: CMakeLists.txt's PLANNER_CCACHE
  libcli11-dev nlohmann-json3-dev
  libprotobuf-dev protobuf-compiler libonnx-dev
  libboost-graph-dev catch2 libfmt-dev
  libopenmpi-dev openmpi-bin libopenblas-dev
  coinor-libcbc-dev
  python3
  chromium
  clang-16 libclang-rt-16-dev llvm-16   # libFuzzer targets (tools/fuzz.sh); llvm-16: llvm-symbolizer
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "bootstrap: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "bootstrap: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
