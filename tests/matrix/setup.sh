#!/usr/bin/env bash
# Installs Synapse (matrix-synapse from PyPI) into tests/matrix/.venv (once),
# for the Matrix tests (tests/gateway/matrix*.rs): a real homeserver they run
# on loopback with SQLite and no federation (tests/support/synapse.rs).
set -euo pipefail
cd "$(dirname "$0")"
if ! [ -x .venv/bin/register_new_matrix_user ] || ! .venv/bin/python -c "import synapse" 2>/dev/null; then
  if ! command -v python3 >/dev/null 2>&1 || ! python3 -m venv --help >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq python3 python3-venv >/dev/null
  fi
  echo "matrix: installing matrix-synapse from PyPI" >&2
  rm -rf .venv
  python3 -m venv .venv
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "matrix-synapse==1.163.2" >&2
  test -x .venv/bin/register_new_matrix_user
fi
