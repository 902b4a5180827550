#!/usr/bin/env bash
# Which reader reads each PDF of Debian's documentation packages (fetched by
# package name), and which PDFs none can read: `carrel probe` on every one,
# tallied. Usage: bench/pdf-readers.sh CARREL_BINARY [WORK_DIR]
set -euo pipefail

PACKAGES=(
  developers-reference r-doc-pdf c++-annotations-pdf docbook-xsl-doc-pdf live-manual-pdf
  auto-multiple-choice-doc-pdf siscone-doc-pdf gri-pdf-doc maint-guide debmake-doc
  debian-reference-en
)
carrel="$(realpath "$1")"
work="${2:-${XDG_CACHE_HOME:-$HOME/.cache}/carrel-bench/pdf-readers}"
mkdir -p "$work/debs" "$work/root"
cd "$work/debs"
for p in "${PACKAGES[@]}"; do
  ls "${p}"_*.deb >/dev/null 2>&1 || apt-get download -qq "$p" 2>/dev/null || echo "pdf-readers: $p not fetched" >&2
done
for d in *.deb; do dpkg-deb -x "$d" "$work/root"; done
cd "$work"
find root -type f -name '*.pdf' | sort >pdfs.txt
echo "pdf-readers: $(wc -l <pdfs.txt) PDFs from ${#PACKAGES[@]} packages"
: >results.tsv
while read -r pdf; do
  if out=$("$carrel" probe --json "$pdf" 2>err.txt); then
    reader=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["reader"])')
    printf '%s\t%s\n' "$reader" "$pdf" >>results.tsv
  else
    printf 'FAILED\t%s\t%s\n' "$pdf" "$(tail -1 err.txt)" >>results.tsv
  fi
done <pdfs.txt
echo "pdf-readers: by reader"
cut -f1 results.tsv | sort | uniq -c | sort -rn
grep '^FAILED' results.tsv || true
