#!/usr/bin/env bash
# The scaling bench's synthetic libraries on PostgreSQL + pgvector: for each
# size, carrel-scale builds (or reuses) the SQLite library, copies it into
# its own database of one pgserver started here, and asks it as it asks
# SQLite; the SQLite row of the same size is printed beside it, from the
# same run. The largest size is then asked again through a streaming read
# replica of that server (pg_basebackup, a hot standby, on the same
# machine): what a replica serves.
# usage: bench/scale-postgresql.sh CARREL_SCALE SEED QUERIES WORK "SIZES" ASKS
set -euo pipefail
scale=$1 seed=$2 queries=$3 work=$4 sizes=$5 asks=$6
. bench/pgserver.sh
pg_start "$(mktemp -d)"
trap 'pg_stop; rm -rf "$PG_DIR"' EXIT
echo "| store | chunks | cards | db MB | build s | topic p50 / p95 ms | subject p50 / p95 ms | fetch p50 ms: lane (exact) | recall@10 / @100 | card recall | RSS while asking, MB: peak (private) |"
echo "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|"
for n in $sizes; do
  "$scale" "$seed" "$queries" --chunks "$n" --work "$work" --asks "$asks" --json "$work/figures.jsonl"
  url=$(pg_createdb "scale_$n")
  rm -rf "$work/$n-chunks-postgresql"
  "$scale" "$seed" "$queries" --chunks "$n" --work "$work" --asks "$asks" --json "$work/figures.jsonl" --postgres "$url"
done
pg_replica
"$scale" "$seed" "$queries" --chunks "$n" --work "$work" --asks "$asks" --json "$work/figures.jsonl" \
  --postgres "postgresql://postgres@127.0.0.1:$PG_REPLICA_PORT/scale_$n"
