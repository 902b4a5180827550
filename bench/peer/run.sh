#!/usr/bin/env bash
# `make bench-peer`: sets up the peer (chromadb, pinned, in a venv in the
# cargo target dir; its model cache is seeded by peer.py) and runs the
# benchmark on the release build. Extra arguments go to peer.py
# (e.g. --limit 5 for a quick check).
set -euo pipefail
cd "$(dirname "$0")/../.."
target="${CARGO_TARGET_DIR:-target}"
venv="$target/peer-venv"
req=bench/peer/requirements.txt
if ! cmp -s "$req" "$venv/.requirements" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$req"
  cp "$req" "$venv/.requirements"
fi
data=bench/data
exec "$venv/bin/python" bench/peer/peer.py --bin "$target" \
  --corpus "$data/html" "$data/peer-extra/python" "$data/peer-extra/postgresql" \
           "$data/markdown" "$data/pdf" "$data/text" \
  --cranfield "${SHARED_EVAL:-../shared/eval}/cranfield" "$@"
