-- Full text within PostgreSQL's 1 MB tsvector limit, whatever the text (issue #28; found by issue #26 item 3's
-- report: test_the_largest_turns_fold_into_recall_rows). A tsvector's lexemes and positions may take at most
-- 1,048,575 bytes ("string is too long for tsvector"): three valid turns of 256K characters of distinct words made
-- the recall window (date || piece t-1 || piece t || piece t+1) pass it and the turn was dead-lettered by the recall
-- consumer, and one text of distinct 4-byte words passes it on its own (a turn's piece, a memory item's text: its index is
-- rebuilt over memengine_tsv by 0044).
--
-- memengine_tsv(text) is to_tsvector('english', text) for every text of up to 16 KiB (all ordinary turns: the same
-- value as before), and for a longer one the english parse of its 4,096-character chunks (cut at the chunk's last
-- space, so no word is split) concatenated in order while the result stays within 340,000 bytes
-- (pg_column_size, which counts more than the limit does): the words of the first ~300 KB of lexemes of a huge
-- text stay searchable, the rest is left out of full text (the text itself is stored and embedded unchanged).
-- Three capped pieces and a date fit the 1 MB limit, so no concatenation of the fold can pass it.
-- The cap, 340,000 bytes, is written in memengine_tsv_chunked. A 16 KiB text cannot give a tsvector near the cap
-- (it would need 20 bytes of tsvector per byte of text).
CREATE OR REPLACE FUNCTION memengine_tsv_chunked(t text) RETURNS tsvector
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE SET search_path = pg_catalog AS $$
DECLARE
    acc   tsvector := ''::tsvector;
    part  tsvector;
    rest  text := t;
    chunk text;
    cut   int;
BEGIN
    WHILE rest <> '' LOOP
        IF length(rest) <= 4096 THEN
            chunk := rest;
            rest := '';
        ELSE
            chunk := left(rest, 4096);
            cut := 4096 - strpos(reverse(chunk), ' ');  -- the last space's position; 4096 if there is none
            IF cut <= 0 OR cut = 4096 THEN cut := 4096; END IF;
            chunk := left(rest, cut);
            rest := substr(rest, cut + 1);
        END IF;
        part := to_tsvector('english', chunk);
        IF pg_column_size(acc) + pg_column_size(part) > 340000 THEN
            EXIT;
        END IF;
        acc := acc || part;
    END LOOP;
    RETURN acc;
END $$;

-- Inlined by the planner (a simple SQL function, so no SET clause): an ordinary text costs one to_tsvector, as
-- before. The chunked function is named with its schema, as written here: index maintenance runs with search_path
-- pg_catalog (PostgreSQL 17+), where an unqualified name is not found.
DO $do$
BEGIN
    EXECUTE format($f$
        CREATE OR REPLACE FUNCTION %1$I.memengine_tsv(t text) RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
        'SELECT CASE WHEN octet_length(t) <= 16384 THEN pg_catalog.to_tsvector(''english''::regconfig, t)
                     ELSE %1$I.memengine_tsv_chunked(t) END'$f$, current_schema());
END $do$;
