#!/usr/bin/env bash
# The Rust peers beside ferroclaw (bench/vs_peers.rs): installs ZeptoClaw
# 0.9.2 from crates.io into a cache dir with its own release profile (its
# `serve` needs the `panel` feature), once, then runs the bench. Never part
# of CI: the install takes minutes on 2 cores.
#   bash bench/vs_peers.sh                      # this build against the peers
#   FERROCLAW_BENCH_BIN=/path/to/ferroclaw bash bench/vs_peers.sh
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${FERROCLAW_PEERS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ferroclaw-peers}"
mkdir -p "$dir"
if ! [ -x "$dir/bin/zeptoclaw" ]; then
  echo "vs_peers: installing ZeptoClaw 0.9.2 into $dir" >&2
  CARGO_TARGET_DIR="$dir/target" cargo install --locked --root "$dir" \
    zeptoclaw --version 0.9.2 --features panel
  rm -rf "$dir/target"
fi
FERROCLAW_PEERS_DIR="$dir" cargo bench --bench vs_peers
