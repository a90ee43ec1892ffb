"""The statements of the context read (``engine.read.service.QueryService.context``): the window scan, the content
of placed rows, the thread's user. Split from ``service.py`` (issue #10 keeps modules at most 600 lines); the
statements are unchanged."""

from __future__ import annotations

from memengine.engine.adapters.checkpoints import BASE_PROJECTION

__all__ = ["CONTENT_SQL", "CONTEXT_SQL", "THREAD_USER_SQL"]

#: The thread's user when the fetched window names none (a window of assistant / tool turns only): the latest older
#: turn that names one (a backward scan of the thread's primary key).
THREAD_USER_SQL = """
SELECT user_id, CASE WHEN role = 'user' THEN text END AS text FROM messages
 WHERE tenant_id = $1 AND thread_id = $2 AND seq < $3 AND user_id IS NOT NULL
 ORDER BY seq DESC LIMIT 1
"""  # the name the read side logged under before it was split


#: One round trip: token sums over the thread's newest ``$6`` rows newest-first (an index scan backward over the
#: primary key that stops there, so the cost does not grow with the thread: issue #13 item 3), keep the rows that can
#: still fit the budget or are among the most recent, with the columns placement reads (``has_condensed`` in place
#: of the condensed form); content, event id, session and time only for the rows likely placed (without a query,
#: and no orphaned tool answer among the newest rows: all of them). Fetching content for every row that could fit
#: cost ~1.5 ms of this statement's ~2 (212 rows where 83 are placed). A placed row without its content gets it
#: after assembly (``CONTENT_SQL``). The scan carries the content columns and the output gates them (``likely``):
#: 0.91-0.95 of the time of a per-row primary-key lookup of the placed rows (``LEFT JOIN LATERAL ... LIMIT 1``) at
#: 8K over 100k turns, 0.85 at 128K over 1M (interleaved on one connection, same rows; session 8).
#: ``scanned``: rows summed (the thread's size when below ``$6``; ``_window`` widens the scan when every scanned row
#: still qualified). ``generation``: the state of every projector (``engine.read.context_cache``).
CONTEXT_SQL = f"""
WITH w AS MATERIALIZED (
    SELECT *,
           sum(tokens_full)      OVER (ORDER BY seq DESC ROWS UNBOUNDED PRECEDING) AS cf,
           sum(tokens_condensed) OVER (ORDER BY seq DESC ROWS UNBOUNDED PRECEDING) AS cc,
           row_number()          OVER (ORDER BY seq DESC) AS rn
    FROM (SELECT seq, role, user_id, tokens_full, tokens_condensed, tool_use_ids, tool_result_ids,
                 content_condensed IS NOT NULL AS has_condensed, event_id, session_id, occurred_at, content,
                 content_condensed
            FROM messages WHERE tenant_id = $1 AND thread_id = $2
          ORDER BY seq DESC LIMIT $6) newest
), near AS (
    SELECT coalesce(max(cc) FILTER (WHERE rn <= $4), 0) AS cc3, coalesce(max(cf), 0) <= $3 AS fits,
           count(*) AS total FROM w
)
SELECT w.seq, w.role, w.user_id, w.has_condensed, w.tokens_full, w.tokens_condensed, w.tool_use_ids,
       w.tool_result_ids, w.rn,
       CASE WHEN p THEN w.event_id::text END AS event_id, CASE WHEN p THEN w.session_id END AS session_id,
       CASE WHEN p THEN w.occurred_at END AS occurred_at,
       CASE WHEN p AND (w.rn <= $4 OR NOT w.has_condensed OR near.fits) THEN w.content::text END AS content,
       CASE WHEN p THEN w.content_condensed::text END AS content_condensed,
       near.total,
       (SELECT min(last_seq) FROM projection_checkpoints
        WHERE {BASE_PROJECTION} = ANY($5::text[])) AS applied,
       (SELECT count(*) || ':' || coalesce(sum(last_seq), 0) FROM projection_checkpoints) AS generation
FROM w CROSS JOIN near
     -- p: the row is likely placed: the newest $4, older rows whose newer rows' condensed tokens leave room in Tier
     -- 2's share $7 beside the newest rows' (Tier 3 holds at most $4 - 1 rows, Tier 2 is contiguous), every row
     -- verbatim when all scanned rows fit (mode full)
     CROSS JOIN LATERAL (SELECT w.rn <= $4 OR w.cc - w.tokens_condensed < $7 + near.cc3 OR near.fits AS p) likely
WHERE w.cf - w.tokens_full < $3 OR w.cc - w.tokens_condensed < $3 OR w.rn <= $4
ORDER BY w.seq
"""

#: The rest of the window rows placed that ``CONTEXT_SQL`` did not fetch whole (and of the thread user's latest
#: turn): $3 the seqs whose verbatim form is shown, $4 those whose condensed form is (a Tier-2 row that has one);
#: primary-key lookups, one form per row.
CONTENT_SQL = """
SELECT seq, event_id::text AS event_id, session_id, occurred_at,
       CASE WHEN seq = ANY($3::bigint[]) THEN content::text END AS content,
       CASE WHEN seq = ANY($4::bigint[]) THEN content_condensed::text END AS content_condensed
  FROM messages WHERE tenant_id = $1 AND thread_id = $2 AND seq = ANY($3::bigint[] || $4::bigint[])
"""
