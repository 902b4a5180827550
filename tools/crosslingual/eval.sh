#!/bin/sh
# Asks the cross-lingual sets with each embedder, in one run:
# tools/crosslingual/eval.sh CARREL SETS_DIR WORK_DIR
# Libraries are kept in WORK_DIR/libs (a second run only re-scans), each
# run's `carrel eval --json` in WORK_DIR/json; report.py prints the table
# and fails when the goal is missed.
set -eu
carrel=$1 sets=$2 work=$3
mkdir -p "$work/libs" "$work/json"
for embedder in all-MiniLM-L6-v2 multilingual-e5-small; do
    for set in en-en ru-ru en-ru; do
        docs=${set#*-}
        "$carrel" eval "$sets/$set" --embedder "$embedder" \
            --keep-library "$work/libs/$docs-$embedder" --json \
            > "$work/json/$set-$embedder.json"
    done
done
exec python3 "$(dirname "$0")/report.py" "$work/json"
