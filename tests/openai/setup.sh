#!/usr/bin/env bash
# Installs the official `openai` Python package (pinned) from PyPI into
# tests/openai/.venv (once), for the OpenAI-compatible API test. Python 3
# and its venv module come from Debian's packages when the machine lacks them.
set -euo pipefail
cd "$(dirname "$0")"
if [ -x .venv/bin/python ] && .venv/bin/python -c "import openai" 2>/dev/null; then
  exit 0
fi
if ! command -v python3 >/dev/null 2>&1 || ! python3 -m venv --help >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq python3 python3-venv >/dev/null
fi
echo "openai: installing the openai Python package from PyPI" >&2
rm -rf .venv
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check "openai==3.54.0" >&2
.venv/bin/python -c "import openai"
