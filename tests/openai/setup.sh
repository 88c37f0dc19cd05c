#!/usr/bin/env bash
# Installs the official `openai` Python package (pinned) from PyPI once per
# machine into the tests' cache (tests/cache.sh) and links tests/openai/.venv
# to it, for the OpenAI-compatible API test. Python 3 and its venv module
# come from Debian's packages when the machine lacks them.
set -euo pipefail
cd "$(dirname "$0")"
. ../cache.sh
cached_dir openai .venv setup.sh
if [ ! -e "$CACHED/.done" ]; then
  if ! command -v python3 >/dev/null 2>&1 || ! python3 -m venv --help >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq python3 python3-venv >/dev/null
  fi
  echo "openai: installing the openai Python package from PyPI" >&2
  python3 -m venv "$CACHED/.venv"
  "$CACHED/.venv/bin/python" -m pip install --quiet --disable-pip-version-check "openai==3.54.0" >&2
  .venv/bin/python -c "import openai"
fi
cached_done
