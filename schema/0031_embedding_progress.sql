-- The embedder worker's progress per model (issue #13 item 5: the embedding lag visible in `memengine status` and
-- /metrics from any process). Not a read model: written by the worker, never by a projection.
--   done_seq:     every memory_vectors row with changed_seq <= done_seq had its vector when the worker last
--                 looked, so the backlog is counted among later rows only (index memory_vectors_changed)
--   texts_per_s:  texts embedded per second over the worker's last 30 s, as of progress_at
ALTER TABLE embedding_models ADD COLUMN IF NOT EXISTS done_seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE embedding_models ADD COLUMN IF NOT EXISTS texts_per_s REAL NOT NULL DEFAULT 0;
ALTER TABLE embedding_models ADD COLUMN IF NOT EXISTS progress_at TIMESTAMPTZ;
