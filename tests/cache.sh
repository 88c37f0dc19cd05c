# Sourced by the tests' setup scripts: installs go once per machine into a
# cache outside the clone, keyed by what decides their content, and the
# clone links to it. A fresh clone on a machine that ran the tests before
# installs nothing (CI spent ~100 s of its run reinstalling the same pinned
# packages); a fresh machine installs as before.
#
#   cached_dir NAME LINK KEY
# sets CACHED to "$cache_root/NAME-<sha of KEY>" (KEY: what decides the
# content, the pinned versions), creating it, and points
# LINK (a path beside the caller) at "$CACHED/$(basename LINK)". The caller
# installs into "$CACHED" when "$CACHED/.done" is missing, then calls
# cached_done. An install runs under a lock, so two runs never write one
# entry; a half-made entry (no .done) is wiped and made again.
CACHE_ROOT="${FERROCLAW_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ferroclaw-tests}"

cached_dir() {
  local name=$1 link=$2 key
  key=$(printf '%s' "$3" | sha256sum | cut -c1-16)
  CACHED="$CACHE_ROOT/$name-$key"
  mkdir -p "$CACHE_ROOT"
  exec {CACHE_LOCK}>"$CACHED.lock"
  flock "$CACHE_LOCK"
  if [ ! -e "$CACHED/.done" ]; then
    rm -rf "$CACHED"
    mkdir -p "$CACHED"
  fi
  if [ ! -L "$link" ] || [ "$(readlink "$link")" != "$CACHED/$(basename "$link")" ]; then
    rm -rf "$link"
    ln -s "$CACHED/$(basename "$link")" "$link"
  fi
}

# A Python venv at "$CACHED/.venv" with the pinned packages "$@" from
# PyPI (Python 3 and venv from Debian's packages when the machine lacks them).
cached_venv() {
  if ! command -v python3 >/dev/null 2>&1 || ! python3 -m venv --help >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq python3 python3-venv >/dev/null
  fi
  python3 -m venv "$CACHED/.venv"
  "$CACHED/.venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@" >&2
}

cached_done() {
  touch "$CACHED/.done"
  flock -u "$CACHE_LOCK"
}
