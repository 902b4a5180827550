#!/usr/bin/env bash
# `make package-test`: the .deb `make package` made, installed with apt on
# this machine (as root), then used as a user would:
#   1. the previous release's package (tools/package-previous.sh) installed,
#      its CLI fills the default library, its app is used in a real window
#      (a question asked, a setting saved, the dark theme picked), then this
#      package installed over it: the library, the chat, the setting and the
#      theme are all still there (ui/test/package/upgrade.test.mjs);
#   2. the installed CLI finds the packaged models with nothing set;
#   3. the installed app passes the real-window journeys (the e2e suite);
#   4. removing the package leaves the user's library where it was.
# Screenshots of the installed app go to $CARGO_TARGET_DIR/package-screens.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
deb=$(ls -t "$target"/release/bundle/deb/*.deb | head -n1)
previous=$(./tools/package-previous.sh)
shots="$target/package-screens"
rm -rf "$shots" && mkdir -p "$shots"
apt_get() { DEBIAN_FRONTEND=noninteractive apt-get "$@" -y -q > /dev/null; }
installed() { dpkg-query -W -f '${Version}' carrel 2>/dev/null || true; }
version_of() { dpkg-deb -f "$1" Version; }

home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
# The real-window tests' X server; -noreset as the Makefile's XVFB says why
# (an app restarted while the server resets cannot open the display).
xvfb=(xvfb-run -a -s "-screen 0 1400x900x24 -noreset")
as_user() { env -u CARREL_MODELS -u CARREL_LIBRARY -u XDG_DATA_HOME HOME="$home" "$@"; }
journeys() {
  (cd ui && as_user PHASE="$1" CARREL_VERSION="$2" CARREL_SCREENSHOTS="$shots/upgrade" TAURI_DRIVER="$target/tools/bin/tauri-driver" \
    timeout -k 30 600 "${xvfb[@]}" node --test --test-timeout=180000 test/package/upgrade.test.mjs)
}

# 1. The previous release, used, then this one installed over it.
[ -z "$(installed)" ] || apt_get remove carrel
echo "package-test: installing the previous release, $previous"
apt_get install --allow-downgrades "$previous"
[ "$(installed)" = "$(version_of "$previous")" ]
as_user carrel add "$repo/fixtures/docs/sourdough-starter.md" > /dev/null
journeys before "$(version_of "$previous")"
echo "package-test: installing $deb over it"
apt_get install "$deb"
[ "$(installed)" = "$(version_of "$deb")" ] || { echo "package-test: $(installed) installed, not $(version_of "$deb")" >&2; exit 1; }
as_user carrel list | grep -q "Sourdough" || { echo "package-test: the upgrade lost the library" >&2; exit 1; }
journeys after "$(version_of "$deb")"

# 2. The CLI on PATH, its models found where the package put them.
version=$(as_user carrel --version)
echo "$version"
grep -q "installed with the package" <<<"$version" || { echo "package-test: carrel did not find the packaged models" >&2; exit 1; }
grep -q "sha256 8199be6f699a" <<<"$version" || { echo "package-test: the packaged embedder is not the pinned one" >&2; exit 1; }
as_user carrel doctor | grep -q "installed with the package"
# The application menu entry: valid, and listed by a launcher (rofi's drun
# mode reads the installed entries and icons), saved as a screenshot.
desktop-file-validate /usr/share/applications/Carrel.desktop
as_user timeout 60 xvfb-run -a -s "-screen 0 1000x300x24" bash -c \
  'rofi -show drun -filter carrel -show-icons -drun-display-format "{name} - {comment}" -theme-str "window {width: 900px;} listview {lines: 3;}" & sleep 4; import -window root "$1"; kill $!' _ "$shots/menu-entry.png"
test -f /usr/share/man/man1/carrel.1.gz
test -f /usr/share/bash-completion/completions/carrel

# 3. The installed app in a real window, finding its own models.
chroma=$(./tools/setup-chroma.sh)
(cd ui && env -u CARREL_MODELS CARREL_INSTALLED=1 CARREL_CHROMA="$chroma" CARREL_APP_BIN=/usr/bin/carrel-app \
  TAURI_DRIVER="$target/tools/bin/tauri-driver" CARREL_SCREENSHOTS="$shots" \
  timeout -k 30 900 "${xvfb[@]}" node --test --test-timeout=180000 test/e2e/app.test.mjs)

# 4. Removed, the program goes and the user's library stays.
apt_get remove carrel
! command -v carrel > /dev/null || { echo "package-test: carrel is still on PATH after removal" >&2; exit 1; }
test -f "$home/.local/share/app.carrel/library/library.sqlite3" || { echo "package-test: removing the package lost the library" >&2; exit 1; }
echo "package-test: $(version_of "$previous") upgraded to $(version_of "$deb") with the library, chat and settings kept; used in a real window; removed, the library stayed"
