-- Recall rows' full-text columns folded, not generated (issue #13 items 1, 2, 5: to_tsvector was ~88 % of a recall
-- row's write; bench/recall_fold_profile.py). The window text repeats each turn's piece three times (t-1, t, t+1) and
-- a new turn rewrote its predecessor's window, so the english parser ran over every piece four to six times. Now the
-- fold parses each piece once (piece_tsv) and builds turn_tsv and win_tsv by tsvector concatenation (||), which
-- gives every lexeme the same number of positions as parsing the joined text (the BM25 tf of engine/read/recall.py
-- and the OR ts_rank of engine/read/user_memory.py read only those counts; tested in
-- tests/integration/test_vectors_bulk.py), except where the parser would read an HTML-like tag across two turns
-- (each turn then keeps its words) and past the parser's position limits (projections/vectors.py). Rows folded before this keep their parsed values and a NULL piece_tsv
-- (the fold parses such a neighbour's piece when it needs it); `memengine rebuild vectors` makes them equal to a
-- fresh fold (projection version 3).
ALTER TABLE memory_vectors ADD COLUMN IF NOT EXISTS piece_tsv tsvector;
ALTER TABLE memory_vectors ALTER COLUMN turn_tsv DROP EXPRESSION IF EXISTS;
ALTER TABLE memory_vectors ALTER COLUMN win_tsv DROP EXPRESSION IF EXISTS;
