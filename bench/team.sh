#!/usr/bin/env bash
# A team library's ingest against a SQLite library's, in one run: the same
# documents added to a fresh SQLite library, to a fresh PostgreSQL library
# by one `carrel add`, and by two at once (the folders split in two), each
# timed as wall clock, alternated over two rounds so that the ratios read
# the same on a busy machine. PostgreSQL is pgserver's (PyPI, pinned,
# tools/setup-pgvector.sh), started here in a temporary folder (as nobody
# when root) with fsync on, as a server keeps it.
# usage: bench/team.sh CARREL CORPUS_DIR OUT_JSON
set -euo pipefail
carrel=$(realpath "$1") corpus=$(realpath "$2") out=$3
work=$(mktemp -d)
. bench/pgserver.sh
pg_start "$work/pg"
trap 'pg_stop; rm -rf "$work"' EXIT
export XDG_DATA_HOME="$work/data"
# The corpus split in two halves, file by file, for the two writers.
mkdir -p "$work/half-0" "$work/half-1"
i=0
while IFS= read -r f; do
  rel=${f#"$corpus"/}
  mkdir -p "$work/half-$((i % 2))/$(dirname "$rel")"
  cp "$f" "$work/half-$((i % 2))/$rel"
  i=$((i + 1))
done < <(find "$corpus" -type f | sort)
docs=$i
: > "$work/runs.tsv"
timed() { # LABEL ROUND COMMAND...: wall seconds of COMMAND
  local start end
  start=$(date +%s.%N)
  "${@:3}"
  end=$(date +%s.%N)
  printf '%s\t%s\t%s\n' "$1" "$2" "$(python3 -c "print($end - $start)")" >> "$work/runs.tsv"
}
two_writers() {
  "$carrel" --kb "$1" add "$work/half-0" > /dev/null 2>&1 & a=$!
  "$carrel" --kb "$1" add "$work/half-1" > /dev/null 2>&1 & b=$!
  wait $a && wait $b
}
for round in 1 2; do
  "$carrel" kb create "sqlite-$round" > /dev/null
  timed sqlite "$round" sh -c "'$carrel' --kb sqlite-$round add '$work/half-0' '$work/half-1' > /dev/null 2>&1"
  for writers in 1 2; do
    url=$(pg_createdb "team_${round}_$writers")
    "$carrel" kb create "pg-$round-$writers" --postgres "$url" > /dev/null
    if [ "$writers" = 1 ]; then
      timed "postgresql, 1 writer" "$round" sh -c "'$carrel' --kb pg-$round-1 add '$work/half-0' '$work/half-1' > /dev/null 2>&1"
    else
      timed "postgresql, 2 writers" "$round" two_writers "pg-$round-2"
    fi
  done
done
for kb in sqlite-1 pg-1-1 pg-1-2; do
  n=$("$carrel" --kb "$kb" list --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
  [ "$n" = "$docs" ] || { echo "$kb lists $n documents, not $docs" >&2; exit 1; }
done
python3 - "$work/runs.tsv" "$out" "$docs" <<'PY'
import json, sys
docs = int(sys.argv[3])
rows = []
for line in open(sys.argv[1]):
    label, rnd, wall = line.rstrip("\n").split("\t")
    rows.append({"store": label, "round": int(rnd), "wall_s": float(wall), "docs_per_s": docs / float(wall)})
print(f"{docs} documents")
print("| round | store | wall s | docs/s | ÷ SQLite |")
print("|---:|---|---:|---:|---:|")
for r in rows:
    base = next(x for x in rows if x["round"] == r["round"] and x["store"] == "sqlite")
    r["ratio"] = r["docs_per_s"] / base["docs_per_s"]
    print(f"| {r['round']} | {r['store']} | {r['wall_s']:.1f} | {r['docs_per_s']:.2f} | {r['ratio']:.2f}× |")
json.dump({"documents": docs, "runs": rows}, open(sys.argv[2], "w"), indent=2)
PY
