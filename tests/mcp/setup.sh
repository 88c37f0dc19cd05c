#!/usr/bin/env bash
# Installs the official MCP reference servers, SDK, inspector CLI and
# conformance suite from the npm registry, and mcp-server-time (the reference
# time server, Python) from PyPI, once per machine into the tests' cache
# (tests/cache.sh), and links tests/mcp/node_modules and tests/mcp/.venv to
# them, for the MCP tests (tests/gateway/mcp*.rs). The Node servers run on
# the Node 24 tests/interop/setup.sh installs. npm, Python 3 and venv come
# from Debian's packages when the machine lacks them.
set -euo pipefail
cd "$(dirname "$0")"
. ../cache.sh
cached_dir mcp-npm node_modules "$(cat package.json)"
if [ ! -e "$CACHED/.done" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq npm >/dev/null
  fi
  echo "mcp: installing @modelcontextprotocol/server-everything, server-filesystem, sdk, inspector-cli and conformance from the npm registry" >&2
  cp package.json "$CACHED/"
  (cd "$CACHED" && npm install --ignore-scripts --no-audit --no-fund --no-package-lock --loglevel=error >&2)
  test -f node_modules/@modelcontextprotocol/server-everything/dist/index.js
  test -f node_modules/@modelcontextprotocol/server-filesystem/dist/index.js
  test -d node_modules/@modelcontextprotocol/sdk
  test -f node_modules/@modelcontextprotocol/conformance/package.json
  test -f node_modules/@modelcontextprotocol/inspector-cli/package.json
fi
cached_done
pin="mcp-server-time==2026.10.19"
cached_dir mcp-py .venv "$pin $(python3 --version 2>&1)"
if [ ! -e "$CACHED/.done" ]; then
  echo "mcp: installing mcp-server-time from PyPI" >&2
  cached_venv "$pin"
  test -x .venv/bin/mcp-server-time
fi
cached_done
