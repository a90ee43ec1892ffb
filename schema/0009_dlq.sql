-- Dead-letter tooling (issue #5 §6, engine/dlq.py): retry, drop and re-failure bookkeeping on dead_letters.
--
-- A dead letter is identified by its FIRST failing delivery (consumer, stream, stream_seq), the key of 0001. A retry
-- republishes the event at a new stream sequence; when that delivery fails again the runner updates the same row
-- (attempts + 1) instead of inserting one per sequence: it finds the row through the retry's
-- Memengine-Retry-Stream-Seq header, else through (consumer, stream, event_id) when the event id is known
-- (a producer republishing after the 24 h dedup window). engine/dlq.py RECORD_SQL holds the statement.
-- last_seq: stream seq of the latest failing delivery; dlq_seqs: the row's open messages on <PREFIX>_DLQ;
-- retries: `memengine dlq retry` count; retried_seq: stream seq of the latest republish.
ALTER TABLE dead_letters ADD COLUMN IF NOT EXISTS last_seq BIGINT;
ALTER TABLE dead_letters ADD COLUMN IF NOT EXISTS dlq_seqs BIGINT[] NOT NULL DEFAULT '{}';
ALTER TABLE dead_letters ADD COLUMN IF NOT EXISTS retries INT NOT NULL DEFAULT 0;
ALTER TABLE dead_letters ADD COLUMN IF NOT EXISTS retried_seq BIGINT;
-- The operator's fix (`dlq retry --payload-file`); `payload` keeps the original bytes for audit.
ALTER TABLE dead_letters ADD COLUMN IF NOT EXISTS corrected_payload BYTEA;
ALTER TABLE dead_letters ADD COLUMN IF NOT EXISTS updated_at TIMESTAMPTZ NOT NULL DEFAULT now();
UPDATE dead_letters SET last_seq = stream_seq WHERE last_seq IS NULL;
CREATE INDEX IF NOT EXISTS dead_letters_event ON dead_letters (consumer, stream, event_id) WHERE event_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS dead_letters_status ON dead_letters (status, consumer, id);
