#!/usr/bin/env bash
# `make package`: Carrel as a Linux desktop user gets software. A release
# build of the app and the CLI, bundled by Tauri's bundler (the Tauri CLI
# from npm, pinned in ui/package.json) into a .deb and an .rpm that hold:
#   /usr/bin/carrel-app, /usr/bin/carrel
#   /usr/lib/Carrel/models/   the ONNX Runtime library, all-MiniLM-L6-v2,
#                             multilingual-e5-small and carrel-ce-v2,
#                             checked against the sha256 that
#                             `make models` recorded before they go in
#   the desktop entry and icons, carrel(1), bash/zsh/fish completions;
# and, beside them, the built-in answerer's model as a package of its own
# (tools/package-model.sh), so the app's package stays small.
# (AppImage is left out: its bundler downloads its tools at build time.)
# Prints the paths of the packages it made.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$(pwd)/$target" ;; esac
: "${CARREL_MODELS:?make package names the models folder (make models fills it)}"
stage="$target/package"
# Only this build's packages are left in the bundle folder.
rm -rf "$stage" "$target/release/bundle"
mkdir -p "$stage/models" "$stage/share"

# The models that go in: every file of the runtime, both embedders (the
# Settings page offers each) and the shipped cross-encoder, copied, then
# checked against the recorded sums. The multilingual embedder keeps its own
# sums beside it (tools/fetch-e5.sh); they are named here from the folder.
{
  grep -E '  (onnxruntime|all-MiniLM-L6-v2|carrel-ce-v2)/' "$CARREL_MODELS/SHA256SUMS"
  sed 's|  |  multilingual-e5-small/|' "$CARREL_MODELS/multilingual-e5-small/SHA256SUMS"
} > "$stage/models/SHA256SUMS"
while read -r _ file; do
  mkdir -p "$stage/models/$(dirname "$file")"
  cp "$CARREL_MODELS/$file" "$stage/models/$file"
done < "$stage/models/SHA256SUMS"
(cd "$stage/models" && sha256sum --quiet -c SHA256SUMS) || { echo "package: a model file does not match its sha256" >&2; exit 1; }

# The commit the binaries say they come from (build.rs reads git).
cargo build --release --bin carrel
"$target/release/carrel" completions bash > "$stage/share/carrel.bash"
"$target/release/carrel" completions zsh > "$stage/share/_carrel"
"$target/release/carrel" completions fish > "$stage/share/carrel.fish"
"$target/release/carrel" manpage | gzip -9n > "$stage/share/carrel.1.gz"

# What the bundle adds to src-tauri/tauri.conf.json for a package.
python3 - "$stage" "$target" > "$stage/tauri.package.json" <<'PY'
import json, os, sys
stage, target = sys.argv[1:]
models = os.path.join(stage, "models")
resources = {}
for root, _, files in os.walk(models):
    for f in files:
        src = os.path.join(root, f)
        resources[src] = os.path.join("models", os.path.relpath(src, models))
share = os.path.join(stage, "share")
files = {
    "/usr/bin/carrel": os.path.join(target, "release", "carrel"),
    "/usr/share/bash-completion/completions/carrel": os.path.join(share, "carrel.bash"),
    "/usr/share/zsh/vendor-completions/_carrel": os.path.join(share, "_carrel"),
    "/usr/share/fish/vendor_completions.d/carrel.fish": os.path.join(share, "carrel.fish"),
    "/usr/share/man/man1/carrel.1.gz": os.path.join(share, "carrel.1.gz"),
}
print(json.dumps({
    "bundle": {
        "active": True,
        "targets": ["deb", "rpm"],
        "category": "Productivity",
        "shortDescription": "A local-first document library with chat mentions",
        "longDescription": "Carrel keeps your documents, folders and web pages in one local library, and answers questions about them with cited passages.",
        "resources": resources,
        "linux": {
            "deb": {
                "files": files,
                "recommends": ["poppler-utils", "tesseract-ocr", "tesseract-ocr-eng"],
            },
            "rpm": {
                "files": files,
                "recommends": ["poppler-utils", "tesseract", "tesseract-langpack-eng"],
            },
        },
    }
}, indent=2))
PY

(cd src-tauri && ../ui/node_modules/.bin/tauri build --ci --bundles deb,rpm --config "$stage/tauri.package.json" >&2)
ls "$target"/release/bundle/deb/*.deb "$target"/release/bundle/rpm/*.rpm
./tools/package-model.sh "$target/release/bundle/model"
