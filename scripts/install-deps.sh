#!/usr/bin/env bash
# Installs what chessbot needs on Debian 12, skipping what is already there.
# Used by both README commands and by .ci/run.
set -euo pipefail

PACKAGES=(
  libopencv-dev clang libclang-dev pkg-config libv4l-dev libudev-dev
  stockfish espeak-ng python3
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "installing: ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo not found: install Rust 1.95 or newer (https://rustup.rs) and re-run" >&2
  exit 1
fi
