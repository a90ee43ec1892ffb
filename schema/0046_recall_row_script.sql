-- Whether a recall row's own words are mostly CJK (issue #28, session 18; projections/vectors.py version 6):
-- segment.mostly_cjk of the turn's body, folded once per turn. Recall leaves such rows out of an English-only
-- embedder's dense list for a mostly-CJK question (engine/read/recall_fragments.py CJK_PAIRS_OUT); computing the rule
-- at query time from the piece cost ~80 us a row (3.9x the thread statement of a 419-turn thread:
-- bench/recall_cjk_ab.py). Rows folded before this keep NULL, and recall computes the same rule from their piece
-- until `memengine rebuild vectors` folds them again.
ALTER TABLE memory_vectors ADD COLUMN IF NOT EXISTS cjk boolean;
