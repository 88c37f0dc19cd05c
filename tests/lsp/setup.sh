#!/usr/bin/env bash
# Installs python-lsp-server (with pyflakes, its diagnostics) from PyPI
# once per machine into the tests' cache (tests/cache.sh) and links
# tests/lsp/.venv to it, for the LSP tool tests (tests/gateway/lsp.rs): a
# real language server the gateway starts over stdio.
set -euo pipefail
cd "$(dirname "$0")"
. ../cache.sh
pin="python-lsp-server==1.13.1 pyflakes==3.4.0"
cached_dir lsp .venv "$pin $(python3 --version 2>&1)"
if [ ! -e "$CACHED/.done" ]; then
  echo "lsp: installing python-lsp-server from PyPI" >&2
  # shellcheck disable=SC2086
  cached_venv $pin
  test -x .venv/bin/pylsp
fi
cached_done
