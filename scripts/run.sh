#!/usr/bin/env bash
# The main job: installs what is missing, builds chessbot and runs it.
# With no arguments it runs the default main job (see README); any arguments are passed to `chessbot`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/install-deps.sh
cargo build --release --locked
if (($# == 0)); then
  set -- serve
fi
exec target/release/chessbot "$@"
