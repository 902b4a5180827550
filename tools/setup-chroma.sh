#!/usr/bin/env bash
# A real Chroma server for the foreign-source tests: PyPI `chromadb`
# (pinned), whose `chroma run` starts a server on a loopback port from a
# temporary folder. It lives in a venv beside the cargo target dir, made on
# first use; prints the path of its `chroma` command.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$(pwd)/$target" ;; esac
venv="$target/chroma-venv"
version=1.5.9
if [ ! -x "$venv/bin/chroma" ] || [ "$("$venv/bin/python" -c 'import chromadb; print(chromadb.__version__)' 2>/dev/null)" != "$version" ]; then
  python3 -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "chromadb==$version" >&2
fi
echo "$venv/bin/chroma"
