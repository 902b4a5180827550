#!/usr/bin/env bash
# Runs tests/mcp/: the real Python MCP client (PyPI `mcp`, pinned) driving
# `carrel mcp` over stdio and `carrel serve` over streamable HTTP. The client lives in a venv beside the
# cargo target dir, created on first use (--venv-only: just that).
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$(pwd)/$target" ;; esac
venv="$target/mcp-client-venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import mcp' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check mcp==2.3.0
fi
[ "${1:-}" = --venv-only ] && exit 0
CARREL_BIN="$target/debug/carrel" timeout 600 "$venv/bin/python" tests/mcp/test_mcp.py
CARREL_BIN="$target/debug/carrel" timeout 600 "$venv/bin/python" tests/mcp/test_hub.py
