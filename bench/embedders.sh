#!/bin/sh
# Ingest throughput and peak memory of each embedder, measured in one run:
# the same documents added to a fresh library per embedder with the release
# CLI under /usr/bin/time, alternated over two rounds, so that the ratio
# reads the same on a busy machine.
# usage: bench/embedders.sh CARREL CORPUS_DIR OUT_JSON
set -eu
carrel=$1 corpus=$2 out=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export XDG_DATA_HOME="$work/data"
: > "$work/runs.tsv"
for round in 1 2; do
    for embedder in all-MiniLM-L6-v2 multilingual-e5-small; do
        name=lib-$round-$(echo "$embedder" | tr 'A-Z.' 'a-z-' | cut -c1-20)
        "$carrel" kb create "$name" --dir "$work/$name" --embedder "$embedder" > /dev/null
        /usr/bin/time -f "%e %M" -o "$work/time" "$carrel" --kb "$name" add "$corpus" > /dev/null
        chunks=$("$carrel" --kb "$name" list --json | python3 -c 'import json,sys; print(sum(d["chunks"] for d in json.load(sys.stdin)))')
        docs=$("$carrel" --kb "$name" list --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
        printf '%s\t%s\t%s\t%s\t%s\n' "$round" "$embedder" "$docs" "$chunks" "$(cat "$work/time")" >> "$work/runs.tsv"
    done
done
python3 - "$work/runs.tsv" "$out" <<'PY'
import json, sys
rows = []
for line in open(sys.argv[1]):
    rnd, embedder, docs, chunks, times = line.rstrip("\n").split("\t")
    wall, rss_kb = times.split()
    rows.append({"round": int(rnd), "embedder": embedder, "documents": int(docs),
                 "chunks": int(chunks), "wall_s": float(wall), "peak_rss_mb": int(rss_kb) / 1024,
                 "chunks_per_s": int(chunks) / float(wall)})
print("| round | embedder | documents | chunks | wall s | chunks/s | peak RSS MB |")
print("|---:|---|---:|---:|---:|---:|---:|")
for r in rows:
    print(f"| {r['round']} | {r['embedder']} | {r['documents']} | {r['chunks']} | {r['wall_s']:.1f} | "
          f"{r['chunks_per_s']:.1f} | {r['peak_rss_mb']:.0f} |")
for rnd in (1, 2):
    m, e = [r for r in rows if r["round"] == rnd]
    print(f"round {rnd}: e5 ingests at {e['chunks_per_s'] / m['chunks_per_s']:.2f}x MiniLM's chunks/s, "
          f"peak RSS {e['peak_rss_mb'] / m['peak_rss_mb']:.2f}x")
json.dump(rows, open(sys.argv[2], "w"), indent=2)
PY
