#!/usr/bin/env bash
# The whole test suite: formatting, lints, every test. What README's test command and CI run.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/install-deps.sh
cargo fmt --check
cargo clippy --all-targets --locked -- -D warnings
cargo test --all-targets --locked
