#!/usr/bin/env bash
# Runs every test on a fresh machine: installs what the tests need that the
# machine may lack (Node 24 + OpenClaw's own CLI from the npm registry, for
# the interop test; the official MCP reference servers and SDK from the
# npm registry, for the MCP tests; the `openai` Python package from PyPI, for the
# OpenAI-compatible API test; Chromium from Debian's packages and
# playwright-core from the npm registry, for the web chat browser test and
# the managed browser's (actors/src/browser/);
# bubblewrap from Debian's packages, for the exec sandbox test; tmux from
# Debian's packages, to type into OpenClaw's TUI as a user does; espeak-ng,
# pocketsphinx and its English model from Debian's packages, for real speech
# in the media tests; Synapse, matrix-synapse from PyPI, for the Matrix tests'
# real homeserver; python-lsp-server from PyPI, for the LSP tools' real
# language server), then
# `cargo test --workspace`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/interop/setup.sh
bash tests/mcp/setup.sh
bash tests/openai/setup.sh
bash tests/browser/setup.sh
bash tests/matrix/setup.sh
bash tests/lsp/setup.sh
if ! command -v bwrap >/dev/null 2>&1; then
  echo "tests: installing bubblewrap (exec sandbox)" >&2
  apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null
fi
if ! command -v tmux >/dev/null 2>&1; then
  echo "tests: installing tmux (OpenClaw TUI test)" >&2
  apt-get update -qq && apt-get install -y -qq tmux >/dev/null
fi
if ! command -v espeak-ng >/dev/null 2>&1 || ! command -v pocketsphinx_continuous >/dev/null 2>&1 \
  || ! command -v opusenc >/dev/null 2>&1 \
  || ! [ -d /usr/share/pocketsphinx/model/en-us ]; then
  echo "tests: installing espeak-ng and pocketsphinx (speech in the media tests)" >&2
  apt-get update -qq && apt-get install -y -qq espeak-ng pocketsphinx pocketsphinx-en-us opus-tools >/dev/null
fi
if ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "tests: installing systemd (systemd-analyze verify, the daemon test)" >&2
  apt-get update -qq && apt-get install -y -qq systemd >/dev/null
fi
# Most integration tests wait on child processes, browsers and sockets, not
# the CPU: on 2 cores, 4 at a time took the suite from 520 s to 394 s with
# the same 505 tests (RUST_TEST_THREADS overrides it).
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-4}"
cargo test --workspace "$@"
