#!/bin/bash
# The official image's contract, reduced to what compose.yaml uses: an empty PGDATA is initialised
# with POSTGRES_USER (superuser, password POSTGRES_PASSWORD) and POSTGRES_DB, clients on the network
# log in with their password, and the server runs in the foreground as `postgres`.
set -euo pipefail
user=${POSTGRES_USER:-postgres}
db=${POSTGRES_DB:-$user}
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown -R postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD must be set to initialise the database}"
  pwfile=$(mktemp)
  printf '%s' "$POSTGRES_PASSWORD" > "$pwfile"
  initdb --pgdata="$PGDATA" --username="$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256
  rm -f "$pwfile"
  echo 'host all all all scram-sha-256' >> "$PGDATA/pg_hba.conf"
  if [ "$db" != postgres ]; then
    # Unix socket only while the database is created: nobody can connect half-initialised.
    pg_ctl --pgdata="$PGDATA" --options="-c listen_addresses=''" --wait start
    psql -v ON_ERROR_STOP=1 --username="$user" --dbname=postgres -c "CREATE DATABASE \"$db\""
    pg_ctl --pgdata="$PGDATA" --mode=fast --wait stop
  fi
fi
if [ "${1:-}" = postgres ]; then shift; exec postgres -c listen_addresses='*' "$@"; fi
exec "$@"
