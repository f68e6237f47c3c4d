#!/usr/bin/env bash
# Installs the Debian packages Tessera builds and tests with. Idempotent: only
# missing packages are installed, so a machine that has them all is untouched.
set -euo pipefail

packages=(
  cmake make ninja-build g++ clang libclang-rt-14-dev pkg-config python3 python3-pip python3-venv
  libboost-dev libboost-filesystem-dev libtomlplusplus-dev libspdlog-dev libfmt-dev
  libcxxopts-dev nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev libomp-dev
  libpcre2-dev libssl-dev jargon-text libcpp-httplib-dev chromium chromium-driver curl libeigen3-dev
  bible-kjv bible-kjv-text libopenblas-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
