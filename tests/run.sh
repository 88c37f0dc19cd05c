#!/usr/bin/env bash
# Runs every test on a fresh machine: installs what the tests need that the
# machine may lack (Node 24 + OpenClaw's own CLI from the npm registry, for
# the interop test), then `cargo test --workspace`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/interop/setup.sh
cargo test --workspace "$@"
