-- issue #26 item 4: the user a thread belongs to (the user_id of its first turn that names one). The query handler
-- answers a request bound to a user only for that user's threads, and a bound writer cannot record into another
-- user's thread. Folded by projections/thread_activity.py (version 2) and never changed by a later turn, so a turn
-- of another user that reaches the thread (a raw publisher with the tenant's credentials) cannot take it over.
-- Rows folded before this get the owner from the transcript still in the read model; `memengine rebuild
-- thread_activity` makes them equal to a fresh fold (pruned turns included).
ALTER TABLE thread_activity ADD COLUMN IF NOT EXISTS owner_user TEXT;
UPDATE thread_activity t SET owner_user = (
    SELECT m.user_id FROM messages m
     WHERE m.tenant_id = t.tenant_id AND m.thread_id = t.thread_id AND m.user_id IS NOT NULL
     ORDER BY m.seq LIMIT 1)
 WHERE owner_user IS NULL;
-- rpc.threads of a bound user: that user's threads, most recently active first
CREATE INDEX IF NOT EXISTS thread_activity_owner ON thread_activity (tenant_id, owner_user, last_active_at DESC);
