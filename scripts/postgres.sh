#!/usr/bin/env bash
# Start (or stop) a private PostgreSQL cluster on 127.0.0.1:${PGPORT:-5433} for the Dagster instance.
# Authentication: scram-sha-256 password on TCP and on the socket (never `trust`); the password is made
# once and kept beside the data directory in pgpass (mode 600).
#   bash scripts/postgres.sh start   → prints the export line to use it:
#   export HCAT_DAGSTER_STORAGE=postgres HCAT_POSTGRES_URL=postgresql+psycopg2://postgres:<password>@127.0.0.1:5433/dagster
#   bash scripts/postgres.sh stop
set -euo pipefail
cd "$(dirname "$0")/.."
PGBIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)"
[ -x "$PGBIN/initdb" ] || { echo "postgres.sh: PostgreSQL server not installed (apt-get install postgresql)" >&2; exit 1; }
PGPORT="${PGPORT:-5433}"
PGDATA="${HCAT_PGDATA:-$PWD/.dagster_home/pgdata}"
ROOTDIR="$(dirname "$PGDATA")"
SOCK="$ROOTDIR/pgsock"
PWFILE="$ROOTDIR/pgpass"
as_pg() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/bash -c "$*"; else bash -c "$*"; fi; }
case "${1:-start}" in
  start)
    mkdir -p "$PGDATA" "$SOCK"
    if [ ! -s "$PWFILE" ]; then (umask 077; python3 -c 'import secrets; print(secrets.token_hex(16))' > "$PWFILE"); fi
    [ "$(id -u)" = 0 ] && chown -R postgres "$PGDATA" "$SOCK" "$PWFILE"
    [ -f "$PGDATA/PG_VERSION" ] || as_pg "'$PGBIN/initdb' -D '$PGDATA' -U postgres --auth-host=scram-sha-256 --auth-local=scram-sha-256 --pwfile='$PWFILE' >/dev/null"
    OPTS="-c listen_addresses=127.0.0.1 -p $PGPORT -k $SOCK"
    as_pg "'$PGBIN/pg_ctl' -D '$PGDATA' -o \"$OPTS\" -l '$PGDATA/server.log' -w status >/dev/null" \
      || as_pg "'$PGBIN/pg_ctl' -D '$PGDATA' -o \"$OPTS\" -l '$PGDATA/server.log' -w start >/dev/null"
    PW="$(cat "$PWFILE")"
    export PGPASSWORD="$PW"
    psql -h 127.0.0.1 -p "$PGPORT" -U postgres -tc "SELECT 1 FROM pg_database WHERE datname='dagster'" | grep -q 1 \
      || psql -h 127.0.0.1 -p "$PGPORT" -U postgres -qc 'CREATE DATABASE dagster' >/dev/null
    echo "export HCAT_DAGSTER_STORAGE=postgres HCAT_POSTGRES_URL=postgresql+psycopg2://postgres:$PW@127.0.0.1:$PGPORT/dagster"
    ;;
  stop)
    as_pg "'$PGBIN/pg_ctl' -D '$PGDATA' -m fast -w stop" ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
