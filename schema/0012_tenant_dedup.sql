-- De-duplication scoped by tenant (issue #17 defect 4).
--
-- Event ids are chosen by publishers and import ids are UUIDv5 of public data, so two tenants can use one id. Keyed
-- by (projector, event_id), an id that tenant B applied first made the projector skip tenant A's event silently.
-- applied_events is now keyed by (projector, tenant_id, event_id) and remembers the event's canonical content digest
-- (events.content_digest: sha256 of the decoded, upcast event re-encoded), so the runner tells a repeat (skipped
-- silently: exactly once) from another event of the same tenant reusing the id (dead-lettered as a conflict).
-- engine/runner.py `_dedupe` holds the rule.
ALTER TABLE applied_events ADD COLUMN IF NOT EXISTS tenant_id TEXT;
ALTER TABLE applied_events ADD COLUMN IF NOT EXISTS digest BYTEA;

-- Rows applied before this migration: the tenant is found through a read model that kept (tenant, event id, seq)
-- of the same message; the rest are marked '*' (not a valid tenant token), which the runner treats as "applied for
-- every tenant", i.e. exactly the old behaviour for those ids. `memengine rebuild` replaces them with exact rows.
UPDATE applied_events a SET tenant_id = m.tenant_id
  FROM messages m WHERE a.tenant_id IS NULL AND m.event_id = a.event_id AND m.seq = a.seq;
UPDATE applied_events a SET tenant_id = t.tenant_id
  FROM tombstones t WHERE a.tenant_id IS NULL AND t.event_id = a.event_id AND t.seq = a.seq;
UPDATE applied_events a SET tenant_id = d.tenant_id
  FROM derived_events d WHERE a.tenant_id IS NULL AND d.event_id = a.event_id AND d.seq = a.seq;
UPDATE applied_events SET tenant_id = '*' WHERE tenant_id IS NULL;
ALTER TABLE applied_events ALTER COLUMN tenant_id SET NOT NULL;
ALTER TABLE applied_events DROP CONSTRAINT IF EXISTS applied_events_pkey;
ALTER TABLE applied_events ADD PRIMARY KEY (projector, tenant_id, event_id);

-- The transcript's event id was unique across tenants: tenant A's turn reusing B's id hit the constraint and
-- (ON CONFLICT DO NOTHING) vanished from A's transcript. Unique per tenant instead; the index also serves the
-- (tenant_id, event_id) lookups of audit and recall.
ALTER TABLE messages DROP CONSTRAINT IF EXISTS messages_event_id_key;
ALTER TABLE messages ADD CONSTRAINT messages_tenant_event_id_key UNIQUE (tenant_id, event_id);
