-- The access trail's read models (issue #30), folded from the served stream (<PREFIX>_SERVED) by the `access`
-- projector group (projections/access.py). Seed 002 §3.1's field names: access_count, last_accessed_at.
CREATE TABLE IF NOT EXISTS served_answers (
    tenant_id    TEXT NOT NULL,
    thread_id    TEXT NOT NULL,          -- '_' for a recall answer bound to no thread
    seq          BIGINT NOT NULL,        -- the served stream's sequence: the answer's address
    event_id     UUID NOT NULL,
    kind         TEXT NOT NULL,          -- context | recall
    pushed       BOOLEAN NOT NULL DEFAULT false,
    user_id      TEXT,
    query        TEXT,
    window_tokens INT NOT NULL DEFAULT 0,
    as_of        TIMESTAMPTZ,
    applied_seq  BIGINT NOT NULL DEFAULT 0,
    mode         TEXT NOT NULL DEFAULT '',
    served_at    TIMESTAMPTZ NOT NULL,
    items        JSONB NOT NULL,         -- [[kind, id, tier, rank], ...] as recorded
    truncated    BOOLEAN NOT NULL DEFAULT false,
    PRIMARY KEY (tenant_id, thread_id, seq)
);
CREATE INDEX IF NOT EXISTS served_answers_user ON served_answers (tenant_id, user_id, served_at);
CREATE INDEX IF NOT EXISTS served_answers_items ON served_answers USING gin (items jsonb_path_ops);

CREATE TABLE IF NOT EXISTS memory_access (
    tenant_id        TEXT NOT NULL,
    memory_id        TEXT NOT NULL,
    access_count     BIGINT NOT NULL,
    last_accessed_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant_id, memory_id)
);
CREATE INDEX IF NOT EXISTS memory_access_hot ON memory_access (tenant_id, access_count DESC);

CREATE TABLE IF NOT EXISTS turn_access (
    tenant_id        TEXT NOT NULL,
    event_id         TEXT NOT NULL,      -- the turn's event id
    access_count     BIGINT NOT NULL,
    last_accessed_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant_id, event_id)
);
