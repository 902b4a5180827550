#!/usr/bin/env bash
# The peer benchmark's documents beyond bench/data (which `make bench` and the
# cross-encoder's training keep as they are): the rest of the Python 3.11
# docs (C API, HOWTOs, tutorial, language reference, FAQ, What's New, …;
# Debian python3.11-doc, PSF licence) and every fifth page of the PostgreSQL
# 15 manual (Debian postgresql-doc-15, PostgreSQL licence), so that the run
# has over 1,000 real documents. Into bench/data/peer-extra/ (git-ignored).
# Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../data"
out=peer-extra
[ -f "$out/.complete" ] && { echo "corpus: peer extras present in bench/data/$out"; exit 0; }
rm -rf "$out" && mkdir -p "$out/debs" "$out/python" "$out/postgresql"
(cd "$out/debs" && { apt-get download python3.11-doc postgresql-doc-15 >/dev/null 2>&1 || {
  apt-get update -qq && apt-get download python3.11-doc postgresql-doc-15; }; })
for d in "$out"/debs/*.deb; do dpkg-deb -x "$d" "$out/root"; done
py="$out/root/usr/share/doc/python3.11/html"
for section in c-api howto tutorial reference faq using whatsnew extending distutils install installing; do
  cp -r "$py/$section" "$out/python/"
done
find "$out/python" -type f ! -name '*.html' -delete
ls "$out"/root/usr/share/doc/postgresql-doc-15/html/*.html | sort | awk 'NR % 5 == 1' |
  while read -r f; do cp "$f" "$out/postgresql/"; done
rm -rf "$out/root" "$out/debs"
touch "$out/.complete"
echo "corpus: peer extras: python $(find "$out/python" -name '*.html' | wc -l), postgresql $(ls "$out/postgresql" | wc -l) pages"
