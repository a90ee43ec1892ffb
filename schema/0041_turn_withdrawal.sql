-- Withdrawn is not forgotten (issue #26 item 6; projections/memory_items.py version 3): a memory's link to a turn
-- withdrawn since (TurnsWithdrawn, resolved by the enricher into SourcesWithdrawn) is kept for the audit trail and
-- marked with the derived event that withdrew it; an item whose every evidence link is withdrawn is retracted.
-- Rows folded before this migration keep NULL (no withdrawal was folded into them before).
ALTER TABLE memory_item_sources ADD COLUMN IF NOT EXISTS withdrawn_by UUID;
CREATE INDEX IF NOT EXISTS memory_item_sources_source ON memory_item_sources (tenant_id, source_event_id);
