-- Memory items found by Chinese words (issue #28): the memory_items fold stores, beside an item's text, the text
-- with its CJK runs cut into words (projections/segment.py, as the recall rows' pieces), NULL when the text has no
-- CJK character; the full-text index and every lexical read (engine/read/recall.py memory_sql, memories.py) parse
-- coalesce(lex_text, text) with memengine_tsv (schema 0042: bounded within the 1 MB tsvector limit). Items folded
-- before this have no lex_text until `memengine rebuild memory_items` (projection version 4).
ALTER TABLE memory_items ADD COLUMN IF NOT EXISTS lex_text TEXT;
DROP INDEX IF EXISTS memory_items_fts;
CREATE INDEX IF NOT EXISTS memory_items_fts ON memory_items USING gin (memengine_tsv(coalesce(lex_text, text)));
