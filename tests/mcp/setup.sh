#!/usr/bin/env bash
# Installs the official MCP reference servers, SDK, inspector CLI and
# conformance suite from the npm registry
# into tests/mcp/node_modules (once), for the MCP tests (tests/gateway/mcp.rs).
# They run on the Node 24 tests/interop/setup.sh installs.
set -euo pipefail
cd "$(dirname "$0")"
if ! { [ -f node_modules/@modelcontextprotocol/server-everything/dist/index.js ] \
  && [ -f node_modules/@modelcontextprotocol/server-filesystem/dist/index.js ] \
  && [ -d node_modules/@modelcontextprotocol/sdk ] \
  && [ -f node_modules/@modelcontextprotocol/conformance/package.json ] \
  && [ -f node_modules/@modelcontextprotocol/inspector-cli/package.json ]; }; then
  if ! command -v npm >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq npm >/dev/null
  fi
  echo "mcp: installing @modelcontextprotocol/server-everything, server-filesystem, sdk, inspector-cli and conformance from the npm registry" >&2
  npm install --ignore-scripts --no-audit --no-fund --no-package-lock --loglevel=error >&2
  test -f node_modules/@modelcontextprotocol/server-everything/dist/index.js
fi
# mcp-server-time (the reference time server, Python) from PyPI into
# tests/mcp/.venv (once). Python 3 and venv come from Debian's packages when
# the machine lacks them.
if ! [ -x .venv/bin/mcp-server-time ]; then
  if ! command -v python3 >/dev/null 2>&1 || ! python3 -m venv --help >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq python3 python3-venv >/dev/null
  fi
  echo "mcp: installing mcp-server-time from PyPI" >&2
  rm -rf .venv
  python3 -m venv .venv
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "mcp-server-time==2026.10.19" >&2
  test -x .venv/bin/mcp-server-time
fi
