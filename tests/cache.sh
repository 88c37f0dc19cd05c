# Sourced by the tests' setup scripts: installs go once per machine into a
# cache outside the clone, keyed by what decides their content, and the
# clone links to it. A fresh clone on a machine that ran the tests before
# installs nothing (CI spent ~100 s of its run reinstalling the same pinned
# packages); a fresh machine installs as before.
#
#   cached_dir NAME LINK FILE...
# sets CACHED to "$cache_root/NAME-<sha of FILE...>", creating it, and points
# LINK (a path beside the caller) at "$CACHED/$(basename LINK)". The caller
# installs into "$CACHED" when "$CACHED/.done" is missing, then calls
# cached_done. An install runs under a lock, so two runs never write one
# entry; a half-made entry (no .done) is wiped and made again.
CACHE_ROOT="${FERROCLAW_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ferroclaw-tests}"

cached_dir() {
  local name=$1 link=$2
  shift 2
  local key
  key=$(cat "$@" | sha256sum | cut -c1-16)
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

cached_done() {
  touch "$CACHED/.done"
  flock -u "$CACHE_LOCK"
}
