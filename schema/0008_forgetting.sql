-- Tombstones of verified forgetting (issue #5 §4): who asked, when, and the scope (tenant + thread or user id).
-- No content: the deletion facts that produce these rows (ThreadDeleted, UserForgotten) carry none, and they stay in
-- the log after the purge, so a rebuild re-creates exactly these rows and nothing of what was forgotten.
CREATE TABLE IF NOT EXISTS tombstones (
    tenant_id    TEXT NOT NULL,
    scope        TEXT NOT NULL,            -- thread | user
    scope_id     TEXT NOT NULL,            -- the thread id or the user id
    event_id     UUID NOT NULL,            -- the deletion fact
    seq          BIGINT NOT NULL,          -- its MEMORY_FACTS sequence
    requested_by TEXT,                     -- the fact's producer (agent, operator)
    reason       TEXT,
    deleted_at   TIMESTAMPTZ NOT NULL,     -- the fact's occurred_at
    PRIMARY KEY (tenant_id, scope, scope_id, seq)
);
