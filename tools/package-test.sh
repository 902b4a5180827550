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
#   4. without the model package, `carrel ask` quotes and says which package
#      writes; with it, the CLI and the app answer in written sentences, each
#      cited by Carrel or "not found" (ui/test/e2e/model.test.mjs);
#   5. removing the app removes its model and leaves the user's library.
# Screenshots of the installed app go to $CARGO_TARGET_DIR/package-screens.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
deb=$(ls -t "$target"/release/bundle/deb/*.deb | head -n1)
model_deb=$(ls -t "$target"/release/bundle/model/*.deb | head -n1)
model_pkg=$(dpkg-deb -f "$model_deb" Package)
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
(cd ui && env -u CARREL_MODELS CARREL_INSTALLED=1 CARREL_ANSWERER=extractive CARREL_CHROMA="$chroma" CARREL_APP_BIN=/usr/bin/carrel-app \
  TAURI_DRIVER="$target/tools/bin/tauri-driver" CARREL_SCREENSHOTS="$shots" \
  timeout -k 30 900 "${xvfb[@]}" node --test --test-timeout=180000 test/e2e/app.test.mjs)

# 4. The model package: the chat quotes without it and says what to install;
# with it, the installed CLI and app write their answers.
question="What is the grey liquid on top of a starter called?"
as_user carrel ask --json "$question" > "$home/quoted.json"
python3 - "$home/quoted.json" "$model_pkg" <<'PY' || { echo "package-test: without the model, the answer did not say which package writes" >&2; exit 1; }
import json, sys
a = json.load(open(sys.argv[1]))
assert a["answerer"] == "extractive", a["answerer"]
assert any(sys.argv[2] in n for n in a["notes"]), a["notes"]
PY
echo "package-test: installing $model_deb"
apt_get install "$model_deb"
as_user carrel --version | grep -E "^answerer .*/usr/lib/Carrel/models/" \
  || { echo "package-test: carrel did not find the packaged answerer's model" >&2; exit 1; }
as_user carrel ask --json "$question" > "$home/written.json"
python3 - "$home/written.json" <<'PY' || { echo "package-test: the installed model did not write a checked answer" >&2; exit 1; }
import json, sys
a = json.load(open(sys.argv[1]))
assert a["answerer"].startswith("local:"), a["answerer"]
st = a["outcome"]["statements"]
assert st and all(s["citations"] or s["check"]["status"] in ("unsupported", "no_claim") for s in st), st
print("package-test: the installed model wrote", len(st), "sentences,", sum(1 for s in st if s["citations"]), "cited by Carrel")
PY
(cd ui && env -u CARREL_MODELS CARREL_APP_BIN=/usr/bin/carrel-app \
  TAURI_DRIVER="$target/tools/bin/tauri-driver" CARREL_SCREENSHOTS="$shots" \
  timeout -k 30 600 "${xvfb[@]}" node --test --test-timeout=300000 test/e2e/model.test.mjs)

# 5. Removed, the program and its model go, and the user's library stays.
apt_get remove carrel
! command -v carrel > /dev/null || { echo "package-test: carrel is still on PATH after removal" >&2; exit 1; }
[ -z "$(dpkg-query -W -f '${Status}' "$model_pkg" 2>/dev/null | grep ' installed')" ] \
  || { echo "package-test: $model_pkg stayed installed without Carrel" >&2; exit 1; }
test -f "$home/.local/share/app.carrel/library/library.sqlite3" || { echo "package-test: removing the package lost the library" >&2; exit 1; }
echo "package-test: $(version_of "$previous") upgraded to $(version_of "$deb") with the library, chat and settings kept; used in a real window; with $model_pkg it wrote its answers; removed, the library stayed"
