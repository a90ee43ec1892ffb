-- memengine core: the runner's bookkeeping and the skeleton's read models.
-- Applied at start-up by engine.db.migrate(), once, tracked in schema_migrations.
-- Table shapes follow seed 000 §1.2 (thread_activity), widened with tenant_id because memengine is multi-tenant.

-- Projector contract (DESIGN.md): the checkpoint moves in the same transaction as the read model.
CREATE TABLE IF NOT EXISTS projection_checkpoints (
    projection   TEXT PRIMARY KEY,
    version      INT NOT NULL,
    stream       TEXT NOT NULL,
    last_seq     BIGINT NOT NULL DEFAULT 0,
    updated_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Event ids a projector has applied: skips a publish repeated after the server's dedup window expired.
CREATE TABLE IF NOT EXISTS applied_events (
    projector    TEXT NOT NULL,
    event_id     UUID NOT NULL,
    seq          BIGINT NOT NULL,
    PRIMARY KEY (projector, event_id)
);

-- Dead letters: events a consumer could not decode or apply, with the error. Mirrors the MEMORY_DLQ stream.
CREATE TABLE IF NOT EXISTS dead_letters (
    id           BIGSERIAL PRIMARY KEY,
    consumer     TEXT NOT NULL,
    stream       TEXT NOT NULL,
    stream_seq   BIGINT NOT NULL,
    subject      TEXT NOT NULL,
    event_id     TEXT,
    error        TEXT NOT NULL,
    payload      BYTEA NOT NULL,
    attempts     INT NOT NULL DEFAULT 1,
    status       TEXT NOT NULL DEFAULT 'open',   -- open | retried | dropped
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (consumer, stream, stream_seq)
);

-- seed 000 §1.2 thread_activity: label, last_active_at (+ message_count, sequence range, sessions).
CREATE TABLE IF NOT EXISTS thread_activity (
    tenant_id       TEXT NOT NULL,
    thread_id       TEXT NOT NULL,
    label           TEXT,
    last_active_at  TIMESTAMPTZ NOT NULL,
    message_count   INT NOT NULL DEFAULT 0,
    sessions_ended  INT NOT NULL DEFAULT 0,
    first_seq       BIGINT NOT NULL,
    last_seq        BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, thread_id)
);
CREATE INDEX IF NOT EXISTS thread_activity_recent ON thread_activity (tenant_id, last_active_at DESC);

-- The live transcript (seed 000 §2: what the checkpoint's message list held), one row per TurnRecorded.
CREATE TABLE IF NOT EXISTS messages (
    tenant_id          TEXT NOT NULL,
    thread_id          TEXT NOT NULL,
    seq                BIGINT NOT NULL,          -- MEMORY_FACTS stream sequence: order and provenance
    event_id           UUID NOT NULL UNIQUE,
    role               TEXT NOT NULL,
    user_id            TEXT,
    session_id         TEXT,
    occurred_at        TIMESTAMPTZ NOT NULL,
    -- JSON, not JSONB: stored and returned verbatim, never queried inside; JSON input is ~35 % cheaper to insert.
    content            JSON NOT NULL,            -- blocks, verbatim (Tier 3)
    content_condensed  JSON,                     -- Tier-2 form (seed 000 §4.3); NULL when equal to content
    text               TEXT NOT NULL,            -- searchable text, thinking excluded
    tokens_full        INT NOT NULL,
    tokens_condensed   INT NOT NULL,             -- 0 when the condensed form is empty
    tool_use_ids       TEXT[] NOT NULL DEFAULT '{}',
    tool_result_ids    TEXT[] NOT NULL DEFAULT '{}',
    metadata           JSON NOT NULL DEFAULT '{}',
    PRIMARY KEY (tenant_id, thread_id, seq)
);
