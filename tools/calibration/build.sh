#!/bin/sh
# Builds Carrel's calibration set: tools/calibration/build.sh OUT_DIR
# Fetches the GNU manuals' Debian packages by name (apt-get download) into
# ${XDG_CACHE_HOME:-$HOME/.cache}/carrel-calibration/debs and writes the set
# into OUT_DIR. Needs only apt, dpkg-deb and python3 (standard library).
set -eu
if [ $# -lt 1 ]; then
    echo "usage: $0 OUT_DIR [--cache DIR] [--offline]" >&2
    exit 2
fi
exec python3 "$(dirname "$0")/build.py" "$@"
