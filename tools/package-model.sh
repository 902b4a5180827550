#!/usr/bin/env bash
# The built-in answerer's model as its own Debian package, so that the app's
# package stays small and a user chooses to add 491 MB:
#   carrel-model-WRITER_VERSION_all.deb
#     /usr/lib/Carrel/models/WRITER/   model.gguf, SHA256SUMS, LICENSE, NOTICE
#     /usr/share/doc/carrel-model-WRITER/copyright
# where the app looks for it (src/models/writer.rs, INSTALLED_MODELS), beside
# the embedder the app's package installs. It depends on the app (this
# version or later): removing Carrel removes its model, and an upgrade of the
# app keeps it. The model file is checked
# against the sum `make models` recorded before it goes in.
# Usage: tools/package-model.sh OUT_DIR; prints the path of the package.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$1"
: "${CARREL_MODELS:?the models folder (make models fills it)}"
writer=qwen2.5-coder-0.5b-instruct
package="carrel-model-$writer"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)
src="$CARREL_MODELS/$writer"
(cd "$src" && sha256sum --quiet -c SHA256SUMS) || { echo "package: $src/model.gguf does not match its sha256 (run make models)" >&2; exit 1; }

root=$(mktemp -d)
chmod 755 "$root"
trap 'rm -rf "$root"' EXIT
dir="$root/usr/lib/Carrel/models/$writer"
doc="$root/usr/share/doc/$package"
mkdir -p "$dir" "$doc" "$root/DEBIAN"
cp "$src/model.gguf" "$src/SHA256SUMS" "models/$writer/LICENSE" "models/$writer/NOTICE" "$dir/"
{ cat "models/$writer/NOTICE"; echo; cat "models/$writer/LICENSE"; } > "$doc/copyright"
cat > "$root/DEBIAN/control" <<EOF
Package: $package
Version: $version
Architecture: all
Maintainer: Carrel <carrel@localhost>
Depends: carrel (>= $version)
Enhances: carrel
Section: misc
Priority: optional
Installed-Size: $(du -sk "$root/usr" | cut -f1)
Description: the language model Carrel writes its answers with
 Qwen2.5-Coder-0.5B-Instruct (Apache-2.0) as GGUF, run on the CPU by the
 llama.cpp built into Carrel. With it, Carrel's chat answers in written
 sentences, each cited by Carrel to the passage that holds it or marked
 "not found in your documents"; without it, the chat answers with quotes.
EOF
mkdir -p "$out"
# The quantised weights barely compress: zstd at its fastest level.
dpkg-deb --root-owner-group -Zzstd -z1 --build "$root" "$out/${package}_${version}_all.deb" > /dev/null
echo "$out/${package}_${version}_all.deb"
