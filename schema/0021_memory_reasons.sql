-- Why each link of an audit chain exists (issue #15 item 4; projections/memory_items.py version 2): the merge
-- decision's reason (a supersede names the slot that changed) and a retraction's or promotion's --reason.
-- Rows folded before this migration keep NULL until `memengine rebuild` re-folds memory_items.
ALTER TABLE memory_item_sources ADD COLUMN IF NOT EXISTS reason TEXT;
ALTER TABLE memory_relations ADD COLUMN IF NOT EXISTS reason TEXT;
