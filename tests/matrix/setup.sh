#!/usr/bin/env bash
# Installs Synapse (matrix-synapse from PyPI) once per machine into the
# tests' cache (tests/cache.sh) and links tests/matrix/.venv to it, for the
# Matrix tests (tests/gateway/matrix*.rs): a real homeserver they run on
# loopback with SQLite and no federation (tests/support/synapse.rs).
set -euo pipefail
cd "$(dirname "$0")"
. ../cache.sh
pin="matrix-synapse==1.163.2"
cached_dir matrix .venv "$pin $(python3 --version 2>&1)"
if [ ! -e "$CACHED/.done" ]; then
  echo "matrix: installing matrix-synapse from PyPI" >&2
  cached_venv "$pin"
  test -x .venv/bin/register_new_matrix_user
fi
cached_done
