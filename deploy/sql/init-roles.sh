#!/bin/sh
# /docker-entrypoint-initdb.d hook of the postgres image (docker-compose.yml): runs once, on the first start of an
# empty data volume, as the superuser; creates the engine's role (deploy/sql/roles.sql) with its password read from
# the docker secret named by PG_ENGINE_PASSWORD_FILE.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
     -v engine_password="$(cat "$PG_ENGINE_PASSWORD_FILE")" -f /deploy/sql/roles.sql
