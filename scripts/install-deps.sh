#!/usr/bin/env bash
# Installs what chessbot needs on Debian 12, skipping what is already there.
# Used by both README commands and by .ci/run.
set -euo pipefail

PACKAGES=(
  libopencv-dev clang libclang-dev pkg-config libv4l-dev libudev-dev
  g++ stockfish espeak-ng
  # Headless browser for tests/browser.rs (the web page driven by keyboard).
  chromium
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
  # Debian's own rustc (1.63) is too old; install the pinned toolchain with rustup.
  echo "installing Rust 1.95 with rustup" >&2
  command -v curl >/dev/null 2>&1 || { $SUDO apt-get install -y -qq curl ca-certificates >/dev/null; }
  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal --default-toolchain 1.95.0 -c rustfmt,clippy
  export PATH="$HOME/.cargo/bin:$PATH"
fi
