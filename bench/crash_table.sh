#!/usr/bin/env bash
# BENCHMARKS.md's crash table: each channel's crash test (the real binary
# SIGKILLed at random points under load, restarted; `tests/gateway/
# channel_crash.rs`) prints one row once its checks ran; this runs them and
# prints the table. A row is only printed by a run whose checks passed, so
# its duplicates and lost are 0 or the test failed. Each test prints its
# seed; FERROCLAW_TEST_SEED replays one.
#
# Usage: bash bench/crash_table.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(cargo test --test integration -- --nocapture \
  telegram_crash:: slack_crash:: discord_crash:: whatsapp_crash:: signal_crash:: matrix_crash:: 2>&1) || {
  echo "$out" | tail -40
  exit 1
}
echo "| channel | sent | SIGKILLs | answered once | interrupted, with a notice | send outcome unknown | duplicates | lost |"
echo "|---|---|---|---|---|---|---|---|"
echo "$out" | grep '^crash-table |' | sed 's/^crash-table //'
echo "$out" | grep -i 'seed' | sort -u | head -20
