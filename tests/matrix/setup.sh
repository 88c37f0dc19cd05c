#!/usr/bin/env bash
# Installs Synapse (matrix-synapse from PyPI) once per machine into the
# tests' cache (tests/cache.sh) and links tests/matrix/.venv to it, for the
# Matrix tests (tests/gateway/matrix*.rs): a real homeserver they run on
# loopback with SQLite and no federation (tests/support/synapse.rs).
set -euo pipefail
cd "$(dirname "$0")"
. ../cache.sh
cached_dir matrix .venv setup.sh
if [ ! -e "$CACHED/.done" ]; then
  if ! command -v python3 >/dev/null 2>&1 || ! python3 -m venv --help >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq python3 python3-venv >/dev/null
  fi
  echo "matrix: installing matrix-synapse from PyPI" >&2
  python3 -m venv "$CACHED/.venv"
  "$CACHED/.venv/bin/python" -m pip install --quiet --disable-pip-version-check "matrix-synapse==1.163.2" >&2
  test -x .venv/bin/register_new_matrix_user
fi
cached_done
