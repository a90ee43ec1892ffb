-- Changing the embedding model is a rebuild, never a mix (issue #28 item 3). Each vector table (one per model:
-- memory_embeddings_<hash> and its memory_item_embeddings_<hash>) is recorded in embedding_models with what
-- identifies the model's vectors:
--   checksum: sha256 of the local model's weight files ("sha256:<hex>"), NULL for a remote (OpenAI-compatible)
--             model, known only by its name and dimension (and for rows registered before this migration, until
--             the model's next start fills it in)
--   state:    active   - the store's model: an engine configured with another one refuses to start, naming
--                        `memengine rebuild vectors --model <configured>`
--             building - the shadow table `memengine rebuild vectors --model` is filling
--             retired  - a former active model: its table stays (an engine still running with that model answers
--                        from it alone; switching back re-embeds only what changed since)
-- At most one model is active. A store with several models registered before this keeps the one that embedded
-- last active.
ALTER TABLE embedding_models ADD COLUMN IF NOT EXISTS checksum TEXT;
ALTER TABLE embedding_models ADD COLUMN IF NOT EXISTS state TEXT NOT NULL DEFAULT 'active'
    CHECK (state IN ('active', 'building', 'retired'));
ALTER TABLE embedding_models ADD COLUMN IF NOT EXISTS activated_at TIMESTAMPTZ;
UPDATE embedding_models SET state = 'retired'
 WHERE model <> (SELECT model FROM embedding_models ORDER BY progress_at DESC NULLS LAST, created_at DESC, model
                  LIMIT 1);
UPDATE embedding_models SET activated_at = created_at WHERE state = 'active' AND activated_at IS NULL;
CREATE UNIQUE INDEX IF NOT EXISTS embedding_models_one_active ON embedding_models ((true)) WHERE state = 'active';
