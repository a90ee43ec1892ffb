-- Recall (issue #3): one row per turn for hybrid search, the embedding cache, and the model registry.
-- Design and measurements: bench/recall_research/FINDINGS.md. The vectors themselves live in one table per embedding
-- model, created at start-up for that model's dimension (engine/embedder_worker.py: memory_embeddings_<hash>), so no
-- dimension is hard-coded here.

CREATE TABLE IF NOT EXISTS memory_vectors (
    tenant_id    TEXT NOT NULL,
    thread_id    TEXT NOT NULL,
    seq          BIGINT NOT NULL,              -- MEMORY_FACTS sequence of the TurnRecorded
    event_id     UUID NOT NULL,
    user_id      TEXT,
    session_id   TEXT,
    session_key  TEXT NOT NULL,                -- coalesce(session_id, ''): neighbours are taken within it
    speaker      TEXT NOT NULL,                -- user_id, else role
    occurred_at  TIMESTAMPTZ NOT NULL,
    date_label   TEXT NOT NULL,                -- "8 May 2023"
    piece        TEXT NOT NULL,                -- "Caroline: text [shares caption]"
    turn_text    TEXT NOT NULL,                -- "[8 May 2023] Caroline: text [shares caption] [image: query]"
    win_text     TEXT NOT NULL DEFAULT '',     -- "[date] " + pieces of turns t-1, t, t+1 (same session)
    emb_text     TEXT NOT NULL DEFAULT '',     -- "[date] " + pieces of turns t-2 .. t+2 (same session): embedded
    emb_sha      BYTEA NOT NULL DEFAULT ''::bytea,  -- sha256(emb_text)
    changed_seq  BIGINT NOT NULL,              -- the event that last changed emb_text (embedder watermark)
    prev_seq     BIGINT,                       -- previous turn of the same thread + session
    next_seq     BIGINT,                       -- next turn of the same thread + session
    turn_tsv     tsvector GENERATED ALWAYS AS (to_tsvector('english', turn_text)) STORED,
    win_tsv      tsvector GENERATED ALWAYS AS (to_tsvector('english', win_text)) STORED,
    PRIMARY KEY (tenant_id, thread_id, seq)
);
CREATE UNIQUE INDEX IF NOT EXISTS memory_vectors_tenant_seq ON memory_vectors (tenant_id, seq);
CREATE INDEX IF NOT EXISTS memory_vectors_session ON memory_vectors (tenant_id, thread_id, session_key, seq);
CREATE INDEX IF NOT EXISTS memory_vectors_user ON memory_vectors (tenant_id, user_id, seq);
CREATE INDEX IF NOT EXISTS memory_vectors_changed ON memory_vectors (changed_seq);
CREATE INDEX IF NOT EXISTS memory_vectors_turn_tsv ON memory_vectors USING gin (turn_tsv);
CREATE INDEX IF NOT EXISTS memory_vectors_win_tsv ON memory_vectors USING gin (win_tsv);

-- (model, sha256(text)) -> vector: a rebuild or a re-derived window never embeds the same text twice.
CREATE TABLE IF NOT EXISTS embedding_cache (
    model   TEXT NOT NULL,
    sha256  BYTEA NOT NULL,
    dim     INT NOT NULL,
    vec     REAL[] NOT NULL,
    PRIMARY KEY (model, sha256)
);

-- Which per-model embeddings table exists, with its dimension.
CREATE TABLE IF NOT EXISTS embedding_models (
    model       TEXT PRIMARY KEY,
    dim         INT NOT NULL,
    table_name  TEXT NOT NULL UNIQUE,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
