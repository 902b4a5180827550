#!/bin/sh
# Builds the cross-lingual sets: tools/crosslingual/build.sh OUT_DIR
# Fetches Debian's English and Russian manual pages by name and version
# (apt-get download) into ${XDG_CACHE_HOME:-$HOME/.cache}/carrel-crosslingual,
# renders them with groff and writes OUT_DIR/{en-en,ru-ru,en-ru}
# (tools/crosslingual/build.py says what each holds).
set -eu
if [ $# -ne 1 ]; then
    echo "usage: $0 OUT_DIR" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
out=$(mkdir -p "$1" && cd "$1" && pwd)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/carrel-crosslingual
EN=manpages_6.03-2_all.deb
RU=manpages-ru_4.18.1-1_all.deb
mkdir -p "$cache/debs"
cd "$cache/debs"
[ -f "$EN" ] || apt-get download manpages=6.03-2
[ -f "$RU" ] || apt-get download manpages-ru=4.18.1-1
if ! command -v groff >/dev/null; then
    apt-get install -y --no-install-recommends groff-base
fi
rm -rf "$cache/en" "$cache/ru"
dpkg-deb -x "$EN" "$cache/en"
dpkg-deb -x "$RU" "$cache/ru"
exec python3 "$here/build.py" "$cache/en/usr/share/man" "$cache/ru/usr/share/man/ru" \
    "$here/../calibration/noise.jsonl" "$out"
