-- Derived memory read models, folded from MEMORY_DERIVED (events/derived.py).
-- Shapes follow seed 000 §1.2 (conversation_summaries, memory_topics), seed 001 (memory_items), seed 002 §4.1
-- (merge decisions, relations), seed 004 §4 (episodes), widened with tenant_id and provenance columns.

CREATE TABLE IF NOT EXISTS conversation_summaries (
    tenant_id        TEXT NOT NULL,
    thread_id        TEXT NOT NULL,
    summary          TEXT NOT NULL,
    message_count    INT NOT NULL DEFAULT 0,      -- messages summarised so far
    covers_until_seq BIGINT NOT NULL,             -- last MEMORY_FACTS sequence the summary covers
    updated_at       TIMESTAMPTZ NOT NULL,        -- the derived event's occurred_at
    event_id         UUID NOT NULL,               -- provenance: the SummaryUpdated event
    model            TEXT NOT NULL,
    PRIMARY KEY (tenant_id, thread_id)
);

CREATE TABLE IF NOT EXISTS memory_topics (
    tenant_id      TEXT NOT NULL,
    thread_id      TEXT NOT NULL,
    topic          TEXT NOT NULL,
    mention_count  INT NOT NULL DEFAULT 1,
    last_seen_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant_id, thread_id, topic)
);

-- seed 001 memory_items + seed 004 priorities/expiry + bi-temporal validity (nothing is destroyed by a merge).
CREATE TABLE IF NOT EXISTS memory_items (
    tenant_id          TEXT NOT NULL,
    memory_id          TEXT NOT NULL,
    user_id            TEXT,
    thread_id          TEXT,
    type               TEXT NOT NULL,
    text               TEXT NOT NULL,
    data               JSONB NOT NULL DEFAULT '{}',
    importance         REAL NOT NULL DEFAULT 0.5,
    confidence         REAL NOT NULL DEFAULT 0.5,
    tags               TEXT[] NOT NULL DEFAULT '{}',
    priority           TEXT NOT NULL,
    expires_at         TIMESTAMPTZ,
    source_session_id  TEXT,
    dedupe_hash        TEXT NOT NULL,
    status             TEXT NOT NULL,             -- active | quarantined | superseded
    valid_at           TIMESTAMPTZ NOT NULL,      -- when the belief started to hold (event time)
    invalid_at         TIMESTAMPTZ,               -- when a later belief replaced it
    superseded_by      TEXT,
    created_at         TIMESTAMPTZ NOT NULL,
    updated_at         TIMESTAMPTZ NOT NULL,
    last_event_id      UUID NOT NULL,             -- the derived event that last changed the row
    PRIMARY KEY (tenant_id, memory_id)
);
CREATE INDEX IF NOT EXISTS memory_items_user ON memory_items (tenant_id, user_id, status);
CREATE INDEX IF NOT EXISTS memory_items_dedupe ON memory_items (tenant_id, user_id, dedupe_hash);

-- Provenance: memory item -> derived event -> source turns (facts).
CREATE TABLE IF NOT EXISTS memory_item_sources (
    tenant_id         TEXT NOT NULL,
    memory_id         TEXT NOT NULL,
    derived_event_id  UUID NOT NULL,
    source_event_id   UUID NOT NULL,
    action            TEXT NOT NULL,              -- the merge decision that linked them (seed 002 §4.1)
    PRIMARY KEY (tenant_id, memory_id, derived_event_id, source_event_id)
);

-- Every derived event folded: type, model, prompt version, sequence. The middle link of an audit chain.
CREATE TABLE IF NOT EXISTS derived_events (
    tenant_id        TEXT NOT NULL,
    event_id         UUID NOT NULL,
    seq              BIGINT NOT NULL,             -- MEMORY_DERIVED sequence
    type             TEXT NOT NULL,
    thread_id        TEXT NOT NULL,
    model            TEXT NOT NULL,
    prompt_version   TEXT NOT NULL,
    source_first_seq BIGINT NOT NULL,
    source_last_seq  BIGINT NOT NULL,
    occurred_at      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant_id, event_id)
);

CREATE TABLE IF NOT EXISTS memory_relations (
    tenant_id         TEXT NOT NULL,
    from_id           TEXT NOT NULL,
    to_id             TEXT NOT NULL,
    relation          TEXT NOT NULL,              -- supersedes | merged | related
    derived_event_id  UUID NOT NULL,
    PRIMARY KEY (tenant_id, from_id, to_id, relation)
);

CREATE TABLE IF NOT EXISTS episodes (
    tenant_id         TEXT NOT NULL,
    episode_id        TEXT NOT NULL,
    thread_id         TEXT NOT NULL,
    session_id        TEXT,
    user_id           TEXT,
    summary           TEXT NOT NULL,
    goal              TEXT,
    outcome           TEXT,
    entities          TEXT[] NOT NULL DEFAULT '{}',
    tools_used        TEXT[] NOT NULL DEFAULT '{}',
    started_at        TIMESTAMPTZ NOT NULL,
    ended_at          TIMESTAMPTZ NOT NULL,
    event_id          UUID NOT NULL,
    source_event_ids  UUID[] NOT NULL,
    PRIMARY KEY (tenant_id, episode_id)
);
CREATE INDEX IF NOT EXISTS episodes_thread ON episodes (tenant_id, thread_id, started_at);
