#!/usr/bin/env bash
# The main job: installs what is missing, builds chessbot and runs it.
# With no arguments it runs the main job, a whole simulated robot game with its web page at
# http://127.0.0.1:8080/ (`chessbot play --sim --vision`); any arguments are passed to `chessbot`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/install-deps.sh
cargo build --release --locked
if (($# == 0)); then
  set -- play --sim --vision
fi
exec target/release/chessbot "$@"
