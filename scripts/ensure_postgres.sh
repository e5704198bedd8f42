#!/usr/bin/env bash
# Debian's PostgreSQL server binaries for the Postgres instance test (tests/ops/test_postgres.py)
# and `make postgres`. Installed by `make test` when run as root; prints how long it took.
set -euo pipefail
pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }
if [ -n "$(pg_bin)" ] && [ -x "$(pg_bin)/initdb" ]; then exit 0; fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "ensure_postgres: not root or no apt-get; the Postgres test will be skipped" >&2; exit 0
fi
export DEBIAN_FRONTEND=noninteractive
t0=$(date +%s)
apt-get update -qq >/dev/null || true
apt-get install -y -qq postgresql >/dev/null || { echo "ensure_postgres: install failed; the Postgres test will be skipped" >&2; exit 0; }
echo "ensure_postgres: installed postgresql in $(( $(date +%s) - t0 ))s" >&2
