# Sourced by the team-library benches: a PostgreSQL server with pgvector from
# PyPI pgserver (pinned, tools/setup-pgvector.sh), in a temporary folder, run
# as nobody when root (PostgreSQL refuses root), fsync on as a server keeps
# it, with 2 GB of shared buffers (SQLite's side of the scaling bench maps
# 2 GiB of its file). `pg_start DIR` starts it and sets PG_PORT;
# `pg_createdb NAME` makes a database; `pg_replica` starts a streaming read
# replica of it (pg_basebackup, a hot standby) and sets PG_REPLICA_PORT;
# `pg_stop` stops both.
pg_start() {
  local site
  site=$(./tools/setup-pgvector.sh)
  PG_DIR=$1
  mkdir -p "$PG_DIR/sock"
  chmod 755 "$PG_DIR" "$(dirname "$PG_DIR")"
  cp -a "$site/pgserver" "$site/pgserver.libs" "$PG_DIR/"
  PG_PORT=$(pg_free_port)
  pg_as_server "$PG_DIR/pgserver/pginstall/bin/initdb -U postgres --auth=trust -E UTF8 --locale=C -D $PG_DIR/data >/dev/null && \
    $PG_DIR/pgserver/pginstall/bin/pg_ctl -D $PG_DIR/data -o '-p $PG_PORT $PG_OPTIONS -k $PG_DIR/sock' -l $PG_DIR/log -w start >/dev/null"
}
PG_OPTIONS="-c listen_addresses=127.0.0.1 -c shared_buffers=2GB"
pg_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
pg_replica() {
  PG_REPLICA_PORT=$(pg_free_port)
  local r=$PG_DIR/replica
  mkdir -p "$r/sock"
  pg_as_server "$PG_DIR/pgserver/pginstall/bin/pg_basebackup -d postgresql://postgres@127.0.0.1:$PG_PORT/postgres -R -X stream -D $r/data && \
    $PG_DIR/pgserver/pginstall/bin/pg_ctl -D $r/data -o '-p $PG_REPLICA_PORT $PG_OPTIONS -k $r/sock' -l $r/log -w start >/dev/null"
}
pg_as_server() {
  if [ "$(id -u)" = 0 ]; then chown -R nobody: "$PG_DIR"; su nobody -s /bin/sh -c "$*"; else sh -c "$*"; fi
}
pg_createdb() {
  pg_as_server "$PG_DIR/pgserver/pginstall/bin/createdb -h 127.0.0.1 -p $PG_PORT -U postgres $1"
  echo "postgresql://postgres@127.0.0.1:$PG_PORT/$1"
}
pg_stop() {
  [ -d "$PG_DIR/replica/data" ] && pg_as_server "$PG_DIR/pgserver/pginstall/bin/pg_ctl -D $PG_DIR/replica/data -m fast stop" >/dev/null 2>&1
  pg_as_server "$PG_DIR/pgserver/pginstall/bin/pg_ctl -D $PG_DIR/data -m fast stop" >/dev/null 2>&1 || true
}
