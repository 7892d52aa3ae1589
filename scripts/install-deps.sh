#!/usr/bin/env bash
# Installs the Debian packages dattn builds with, only those missing; silent when all are present.
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev
          libopenblas-dev libsentencepiece-dev libpcre2-dev libutf8proc-dev libavcodec-dev libavformat-dev libavutil-dev libswscale-dev
          libsqlite3-dev libcpp-httplib-dev curl  # dattn serve: job store, HTTP; curl runs the README's example
          libopenmpi-dev openmpi-bin  # multi-rank runs (src/parallel) and their mpirun tests
          clang libc++-dev libc++abi-dev libomp-dev)  # the last four: scripts/check-portability.sh
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "dattn: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
