#!/bin/sh
# The cluster profile's PostgreSQL (docker-compose.yml, docs/CLUSTER.md): Debian's postgresql-15, a cluster created
# in $PGDATA on first start (user $POSTGRES_USER with $POSTGRES_PASSWORD, database $POSTGRES_DB, password auth over
# TCP), then postgres itself as PID 1 (SIGINT from `docker stop`: fast shutdown, committed rows are on disk).
set -eu
BIN=/usr/lib/postgresql/15/bin
: "${PGDATA:=/var/lib/postgresql/data}" "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=kc}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD must be set on first start}"
    pwfile=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
    "$BIN/initdb" -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust \
        --auth-host=scram-sha-256 --no-locale -E UTF8 >/dev/null
    rm -f "$pwfile"
    echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
    if [ "$POSTGRES_DB" != postgres ]; then
        echo "CREATE DATABASE \"$POSTGRES_DB\";" | "$BIN/postgres" --single -D "$PGDATA" postgres >/dev/null
    fi
fi
exec "$BIN/postgres" -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/tmp
