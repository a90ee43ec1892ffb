-- Memory lifecycle (issue #4, second part): explicit assertions / retractions / promotions, consolidation,
-- physical pruning, idle-timeout episodes. Every table and column here is folded from MEMORY_DERIVED, so a rebuild
-- reproduces it.

-- seed 004 §7 compute_decay: when a consolidation last decayed the item's importance (decay runs from
-- max(updated_at, decayed_at), so a daily run never decays the same interval twice).
ALTER TABLE memory_items ADD COLUMN IF NOT EXISTS decayed_at TIMESTAMPTZ;
-- statuses now: active | quarantined | superseded | retracted | deleted | expired (none is ever removed)
CREATE INDEX IF NOT EXISTS memory_items_expiry ON memory_items (tenant_id, expires_at) WHERE invalid_at IS NULL;

-- seed 004 §4: what closed an episode (session_ended | idle).
ALTER TABLE episodes ADD COLUMN IF NOT EXISTS closed_by TEXT NOT NULL DEFAULT 'session_ended';

-- seed 000 §3.1 physical pruning: the transcript of a thread holds no turn with seq <= through_seq. Folded from
-- MessagesPruned by the derived projector, which also deletes those rows from `messages`; the messages fold does not
-- insert a turn a mark covers, so a facts replay after the mark never resurrects pruned turns.
CREATE TABLE IF NOT EXISTS message_prune_marks (
    tenant_id     TEXT NOT NULL,
    thread_id     TEXT NOT NULL,
    through_seq   BIGINT NOT NULL,          -- MEMORY_FACTS sequence: turns up to here live in the log only
    pruned        INT NOT NULL,             -- turns removed by all prunes so far
    event_id      UUID NOT NULL,            -- the last MessagesPruned event
    pruned_at     TIMESTAMPTZ NOT NULL,     -- its occurred_at (event time)
    PRIMARY KEY (tenant_id, thread_id)
);
