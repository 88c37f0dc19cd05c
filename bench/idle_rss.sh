#!/usr/bin/env bash
# Idle memory of the release gateway: starts it on a fresh state dir and a
# loopback port, waits until the port accepts connections, lets it settle,
# prints VmRSS, then stops it with SIGTERM.  Usage: bash bench/idle_rss.sh [settle-seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q
state=$(mktemp -d)
trap 'rm -rf "$state"' EXIT
port=$((20000 + RANDOM % 20000))
./target/release/ferroclaw --state-dir "$state" gateway --port "$port" 2>/dev/null &
pid=$!
for _ in $(seq 1 200); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
  sleep 0.05
done
sleep "${1:-2}"
echo "idle RSS: $(awk '/VmRSS/ {print $2, $3}' "/proc/$pid/status")"
kill -TERM "$pid"
wait "$pid"
