-- The engine's own audit trail (issue #5 "Audit trail of the engine itself"): every rebuild, verify, forget,
-- consolidation and dead-letter action, with who ran it, when, on what scope, and how it ended.
-- This table is NOT a read model: it records operator actions, which are not events of the log, so a rebuild
-- neither creates nor drops it (rebuild and verify leave it alone).
CREATE TABLE IF NOT EXISTS operations (
    id           BIGSERIAL PRIMARY KEY,
    kind         TEXT NOT NULL,          -- rebuild | verify | forget-thread | forget-user | consolidate | dlq-retry | dlq-drop | ...
    actor        TEXT NOT NULL,          -- MEMENGINE_ACTOR, else the OS user
    scope        JSONB NOT NULL DEFAULT '{}'::jsonb,   -- tenant / thread / user / projections / dead-letter ids: no content
    status       TEXT NOT NULL DEFAULT 'started',      -- started | ok | failed
    detail       JSONB NOT NULL DEFAULT '{}'::jsonb,   -- figures and the outcome (counts, checksums, error)
    started_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    finished_at  TIMESTAMPTZ
);
CREATE INDEX IF NOT EXISTS operations_recent ON operations (started_at DESC);
