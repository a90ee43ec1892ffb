-- Resumable forgetting and visibly interrupted operations (issue #17 defect 8).
--
-- operations: the process that runs an operation (host, pid) holds a PostgreSQL session advisory lock
-- (engine/operations.py LOCK_CLASS, row id) for as long as it runs. PostgreSQL releases it when the session ends, a
-- SIGKILLed process included, so a reader tells `running` (status started, lock held) from `interrupted` (status
-- started, lock free) without trusting a heartbeat's clock.
ALTER TABLE operations ADD COLUMN IF NOT EXISTS owner_host TEXT;
ALTER TABLE operations ADD COLUMN IF NOT EXISTS owner_pid INT;

-- forget_runs: one row per forgetting (engine/forget.py), written before the deletion fact is published, with what
-- the later steps need once the log is purged (the forgotten events' ids and sequences, the embedding hashes of their
-- recall rows, the threads) and the steps done. A re-run of forget-thread / forget-user for a scope with an
-- unfinished row resumes it. Ids and hashes only, no content; they are cleared when the run finishes.
CREATE TABLE IF NOT EXISTS forget_runs (
    id            BIGSERIAL PRIMARY KEY,
    tenant_id     TEXT NOT NULL,
    scope         TEXT NOT NULL,                      -- thread | user
    scope_id      TEXT NOT NULL,                      -- the thread id or the user id
    tombstone_id  UUID NOT NULL,                      -- event id of the deletion fact (ThreadDeleted, UserForgotten)
    tombstone_at  TIMESTAMPTZ NOT NULL,               -- its occurred_at: a re-publish is the same event
    requested_by  TEXT NOT NULL,
    reason        TEXT,
    tombstone_seq BIGINT,                             -- its MEMORY_FACTS sequence, once published
    event_ids     UUID[] NOT NULL DEFAULT '{}',       -- forgotten facts and derived events
    fact_seqs     BIGINT[] NOT NULL DEFAULT '{}',     -- (user scope) facts to erase by sequence
    derived_seqs  BIGINT[] NOT NULL DEFAULT '{}',     -- (user scope) derived events to erase by sequence
    emb_shas      BYTEA[] NOT NULL DEFAULT '{}',      -- sha256 of the recall rows' emb_text (embedding cache keys)
    threads       TEXT[] NOT NULL DEFAULT '{}',       -- threads whose working memory goes
    steps         TEXT[] NOT NULL DEFAULT '{}',       -- done: published, purged, rebuilt, scrubbed
    counts        JSONB NOT NULL DEFAULT '{}'::jsonb,
    started_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    finished_at   TIMESTAMPTZ
);
CREATE UNIQUE INDEX IF NOT EXISTS forget_runs_open ON forget_runs (tenant_id, scope, scope_id) WHERE finished_at IS NULL;
