#!/usr/bin/env bash
# A real PostgreSQL with pgvector for the foreign-source tests: PyPI
# `pgserver` (pinned; PostgreSQL 16.2 and pgvector 0.6.2, built for any
# x86-64), whose binaries start a server on a loopback port from a temporary
# folder. It lives in a venv beside the cargo target dir, made on first use;
# prints the folder holding its `pgserver` package (the tests copy it where
# an unprivileged user can run it when they run as root, since PostgreSQL
# refuses to).
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$(pwd)/$target" ;; esac
venv="$target/pgvector-venv"
version=0.1.4
site() { "$venv/bin/python" -c 'import pgserver, os; print(os.path.dirname(os.path.dirname(pgserver.__file__)))' 2>/dev/null; }
if [ ! -x "$venv/bin/python" ] || [ "$("$venv/bin/python" -m pip show pgserver 2>/dev/null | awk '/^Version:/ { print $2 }')" != "$version" ]; then
  python3 -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "pgserver==$version" >&2
fi
dir="$(site)"
test -x "$dir/pgserver/pginstall/bin/postgres"
echo "$dir"
