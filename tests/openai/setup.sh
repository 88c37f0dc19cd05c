#!/usr/bin/env bash
# Installs the official `openai` Python package (pinned) from PyPI once per
# machine into the tests' cache (tests/cache.sh) and links tests/openai/.venv
# to it, for the OpenAI-compatible API test. Python 3 and its venv module
# come from Debian's packages when the machine lacks them.
set -euo pipefail
cd "$(dirname "$0")"
. ../cache.sh
pin="openai==3.54.0"
cached_dir openai .venv "$pin $(python3 --version 2>&1)"
if [ ! -e "$CACHED/.done" ]; then
  echo "openai: installing the openai Python package from PyPI" >&2
  cached_venv "$pin"
  .venv/bin/python -c "import openai"
fi
cached_done
