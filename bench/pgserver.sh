# Sourced by the team-library benches: a PostgreSQL server with pgvector from
# PyPI pgserver (pinned, tools/setup-pgvector.sh), in a temporary folder, run
# as nobody when root (PostgreSQL refuses root), fsync on as a server keeps
# it. `pg_start DIR` starts it and sets PG_PORT; `pg_createdb NAME` makes a
# database; `pg_stop` stops it.
pg_start() {
  local site
  site=$(./tools/setup-pgvector.sh)
  PG_DIR=$1
  mkdir -p "$PG_DIR/sock"
  chmod 755 "$PG_DIR" "$(dirname "$PG_DIR")"
  cp -a "$site/pgserver" "$site/pgserver.libs" "$PG_DIR/"
  PG_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  pg_as_server "$PG_DIR/pgserver/pginstall/bin/initdb -U postgres --auth=trust -E UTF8 --locale=C -D $PG_DIR/data >/dev/null && \
    $PG_DIR/pgserver/pginstall/bin/pg_ctl -D $PG_DIR/data -o '-p $PG_PORT -c listen_addresses=127.0.0.1 -k $PG_DIR/sock' -l $PG_DIR/log -w start >/dev/null"
}
pg_as_server() {
  if [ "$(id -u)" = 0 ]; then chown -R nobody: "$PG_DIR"; su nobody -s /bin/sh -c "$*"; else sh -c "$*"; fi
}
pg_createdb() {
  pg_as_server "$PG_DIR/pgserver/pginstall/bin/createdb -h 127.0.0.1 -p $PG_PORT -U postgres $1"
  echo "postgresql://postgres@127.0.0.1:$PG_PORT/$1"
}
pg_stop() {
  pg_as_server "$PG_DIR/pgserver/pginstall/bin/pg_ctl -D $PG_DIR/data -m fast stop" >/dev/null 2>&1 || true
}
