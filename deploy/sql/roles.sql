-- The PostgreSQL role memengine runs as, with only the grants it needs (issue #6 §4).
--
-- Run once per database, as a superuser (pgvector is not a trusted extension), connected to the engine's database:
--
--   psql "postgresql://postgres@db-host/memengine" -v engine_password="$(cat /run/secrets/pg_engine_password)" \
--        -f deploy/sql/roles.sql
--
-- Optional variable: engine_role (default memengine). Idempotent: re-running it resets the password and the
-- grants. The engine then connects with DATABASE_URL=postgresql://memengine:<password>@db-host:5432/memengine
--
-- What the engine needs, and why:
-- * LOGIN, nothing else: NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS. It cannot touch other
--   databases, roles or the server's files.
-- * Ownership of this one database (hence of its schema public, PostgreSQL >= 15): the migrations (schema/*.sql,
--   applied at start-up) create its tables; it creates tables at run time (one vector table per embedding model,
--   engine/embedding/worker.py) and schemas for a rebuild's shadow tables and their atomic swap (engine/ops/rebuild.py).
-- * No other role may connect here: PUBLIC loses its default CONNECT / TEMPORARY on this database and CREATE on
--   public.
-- * pgvector is installed by the superuser (an untrusted extension); its owner stays the superuser.
-- Advisory locks, LISTEN/NOTIFY and ANALYZE of its own tables need no grant.

\set ON_ERROR_STOP on
\if :{?engine_role}
\else
  \set engine_role memengine
\endif
\if :{?engine_password}
\else
  -- with ON_ERROR_STOP, psql stops here with exit status 3
  DO $$ BEGIN RAISE EXCEPTION 'set the password: psql -v engine_password=... -f roles.sql'; END $$;
\endif

SELECT format('CREATE ROLE %I', :'engine_role')
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'engine_role') \gexec

ALTER ROLE :"engine_role" WITH LOGIN PASSWORD :'engine_password'
    NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS NOINHERIT CONNECTION LIMIT 200;

CREATE EXTENSION IF NOT EXISTS vector SCHEMA public;

ALTER DATABASE :"DBNAME" OWNER TO :"engine_role";
REVOKE ALL ON DATABASE :"DBNAME" FROM PUBLIC;
GRANT CONNECT, TEMPORARY ON DATABASE :"DBNAME" TO :"engine_role";

-- PostgreSQL >= 15 gives public to pg_database_owner (= the engine now); older servers need it said.
ALTER SCHEMA public OWNER TO :"engine_role";
REVOKE CREATE ON SCHEMA public FROM PUBLIC;

-- A stuck client must not hold locks (the projectors' advisory locks among them) for ever.
ALTER ROLE :"engine_role" IN DATABASE :"DBNAME" SET idle_in_transaction_session_timeout = '10min';
