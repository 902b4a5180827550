#!/usr/bin/env bash
# `make package-test`: the .deb `make package` made, installed with apt on
# this machine (as root), then used as a user would: the installed CLI finds
# the packaged models with nothing set, the installed app is driven in a real
# window (the e2e journeys, under Xvfb, with a fresh HOME), and removing the
# package leaves the user's library where it was.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
deb=$(ls -t "$target"/release/bundle/deb/*.deb | head -n1)
echo "package-test: installing $deb"
DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$deb" > /dev/null

home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
as_user() { env -u CARREL_MODELS -u CARREL_LIBRARY -u XDG_DATA_HOME HOME="$home" "$@"; }

# The CLI on PATH, its models found where the package put them.
version=$(as_user carrel --version)
echo "$version"
grep -q "installed with the package" <<<"$version" || { echo "package-test: carrel did not find the packaged models" >&2; exit 1; }
grep -q "sha256 8199be6f699a" <<<"$version" || { echo "package-test: the packaged embedder is not the pinned one" >&2; exit 1; }
as_user carrel add "$repo/fixtures/docs/sourdough-starter.md" > /dev/null
as_user carrel doctor | grep -q "installed with the package"
test -f /usr/share/applications/Carrel.desktop || test -f /usr/share/applications/carrel.desktop
test -f /usr/share/man/man1/carrel.1.gz
test -f /usr/share/bash-completion/completions/carrel

# The installed app in a real window, finding its own models.
chroma=$(./tools/setup-chroma.sh)
(cd ui && env -u CARREL_MODELS CARREL_INSTALLED=1 CARREL_CHROMA="$chroma" CARREL_APP_BIN=/usr/bin/carrel-app \
  TAURI_DRIVER="$target/tools/bin/tauri-driver" CARREL_SCREENSHOTS="$target/package-screens" \
  timeout -k 30 900 xvfb-run -a -s "-screen 0 1400x900x24" node --test --test-timeout=180000 test/e2e/app.test.mjs)

# Removed, the program goes and the user's library stays.
DEBIAN_FRONTEND=noninteractive apt-get remove -y -q carrel > /dev/null
! command -v carrel > /dev/null || { echo "package-test: carrel is still on PATH after removal" >&2; exit 1; }
test -f "$home/.local/share/app.carrel/library/library.sqlite3" || { echo "package-test: removing the package lost the library" >&2; exit 1; }
echo "package-test: installed, used in a real window, removed; the library stayed"
