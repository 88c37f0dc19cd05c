#!/usr/bin/env bash
# Installs what the web chat tests need that a fresh machine lacks (once):
# Debian's Chromium and ChromeDriver (the browser; playwright-core drives
# /usr/bin/chromium, nothing is downloaded by the driver), playwright-core
# from the npm registry into tests/browser/node_modules, and the web chat's
# pinned build tools into src/http/webchat/ui/node_modules (the test that
# rebuilds the bundle and compares it with the committed dist/).
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -x /usr/bin/chromium ]; then
  echo "browser: installing chromium and chromium-driver from Debian's packages" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
fi
if ! command -v npm >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq npm >/dev/null
fi
if [ ! -f node_modules/playwright-core/package.json ]; then
  echo "browser: installing playwright-core from the npm registry" >&2
  npm install --ignore-scripts --no-audit --no-fund --no-package-lock --loglevel=error >&2
fi
test -f node_modules/playwright-core/package.json
cd ../../src/http/webchat/ui
if [ ! -f node_modules/esbuild/package.json ] || [ ! -f node_modules/marked/package.json ]; then
  echo "browser: installing the web chat's build tools (npm ci)" >&2
  npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2
fi
test -f node_modules/esbuild/package.json
