-- Recall over typed memory items and tenant-wide recall at scale (issue #3; engine/recall.py).
-- Seeds: 002 §2.3/§4.1 (vector search + time decay + importance), 004 §6 (search_memory, expired items excluded),
-- 000 §6 (full-text fallback without an embedder).

-- Full-text over memory_items.text (search_memory's lexical list and its fallback without an embedder). An
-- expression index, not a column: memory_items belongs to the derived-memory fold, which this leaves untouched.
CREATE INDEX IF NOT EXISTS memory_items_fts ON memory_items USING gin (to_tsvector('english', text));
CREATE INDEX IF NOT EXISTS memory_items_type ON memory_items (tenant_id, type, status);

-- Document frequencies of turn_tsv lexemes per tenant (a ts_stat() snapshot), refreshed in the background when a
-- tenant has grown by 10 % (engine.recall.TermStats). Used only by tenant-wide recall over large tenants, to leave
-- out of the OR tsquery the lexemes that match a large share of all turns (a speaker's name matched every second
-- turn: 2.2 s at 100k turns) and to give BM25 its idf without counting matches at query time. Not a read model of
-- the log: a statistic of one (like ANALYZE's), rebuilt from memory_vectors at any time.
CREATE TABLE IF NOT EXISTS recall_term_stats (
    tenant_id  TEXT NOT NULL,
    lexeme     TEXT NOT NULL,
    ndoc       INT NOT NULL,                 -- turns of the tenant whose turn_tsv contains the lexeme
    PRIMARY KEY (tenant_id, lexeme)
);

CREATE TABLE IF NOT EXISTS recall_tenant_stats (
    tenant_id     TEXT PRIMARY KEY,
    n_docs        BIGINT NOT NULL,           -- turns of the tenant when the snapshot was taken
    refreshed_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

