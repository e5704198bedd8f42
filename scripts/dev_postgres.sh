#!/usr/bin/env bash
# A local PostgreSQL server for the Dagster instance (docs/operations.md "Postgres for teams").
#
#   scripts/dev_postgres.sh start DIR [PORT]   initdb (first time) + start; prints the DAGSTER_PG_URL
#   scripts/dev_postgres.sh stop DIR
#   scripts/dev_postgres.sh render HOME        write HOME/dagster.yaml = the project's instance
#                                              settings + the Postgres storage block
#
# The server listens on 127.0.0.1 only, trusts local connections (development only) and keeps
# its data, socket and log under DIR. As root it runs as the `postgres` user (initdb refuses root).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cmd="${1:-}"; dir="${2:-}"
bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

case "$cmd" in
  render)
    mkdir -p "$dir"
    cat "$ROOT/.dagster_home/dagster.yaml" "$ROOT/.dagster_home/dagster.postgres.yaml" > "$dir/dagster.yaml"
    ;;
  start)
    port="${3:-5433}"
    [ -x "$bin/initdb" ] || { echo "no PostgreSQL binaries: run scripts/ensure_postgres.sh (as root)" >&2; exit 1; }
    mkdir -p "$dir"
    dir="$(cd "$dir" && pwd)"
    [ "$(id -u)" = 0 ] && chown postgres "$dir"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
      as_pg "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 >/dev/null
    fi
    if ! as_pg "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
      as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null
    fi
    as_pg "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -tAc "select 1 from pg_database where datname='dagster'" \
      | grep -q 1 || as_pg "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres dagster
    echo "postgresql+psycopg2://postgres@127.0.0.1:$port/dagster"  # psycopg2: the driver dagster-postgres installs
    ;;
  stop)
    as_pg "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    ;;
  *)
    echo "usage: $0 start DIR [PORT] | stop DIR | render HOME" >&2; exit 2
    ;;
esac
