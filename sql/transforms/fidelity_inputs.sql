-- One row per live, non-test note: the inputs of seed 000's tier rules as of $now, plus the
-- tier stored now (stored_tier), so the write can skip unchanged notes before any join, and
-- the processed_notes rowid (row_id), so it joins its target on an integer, not a VARCHAR
-- (~0.25 s less per million changed rows). rowid is only read within one statement.
-- selene_dag.notes.fidelity_sql.fidelity_inputs returns the five input columns.
-- Thread status of a note: 'active' if any of its threads is active, else 'archived' if it
-- is in a thread, else NULL. Last access falls back to the note's age (the seed's proxy).
--
-- Ages are date_diff('second', t, $now) / 86400.0, i.e. whole-second boundaries crossed,
-- but computed from epoch_us with floor division: on TIMESTAMPTZ, date_diff goes through
-- ICU and costs ~1.7 s per million values, the integer form ~0.02 s, with identical results
-- in every time zone (floor, not truncation, so pre-1970 instants agree too).
-- Thread status is aggregated per note before the join, so no wide GROUP BY is needed:
-- notes.id and processed_notes.note_id are primary keys, one row per note.
WITH thread_status AS (
    SELECT
        tn.note_id,
        CASE WHEN bool_or(t.status = 'active') THEN 'active' ELSE 'archived' END
            AS thread_status
    FROM thread_notes AS tn
    JOIN threads AS t ON t.id = tn.thread_id
    GROUP BY tn.note_id
),

live AS (
    SELECT
        n.id AS note_id,
        epoch_us(n.created_at) AS created_us,
        epoch_us(coalesce(p.last_accessed_at, n.created_at)) AS access_us,
        epoch_us($now::TIMESTAMPTZ) AS now_us,
        (p.essence IS NOT NULL) AS has_essence,
        ts.thread_status,
        p.fidelity_tier AS stored_tier,
        p.rowid AS row_id
    FROM notes AS n
    JOIN processed_notes AS p ON p.note_id = n.id
    LEFT JOIN thread_status AS ts ON ts.note_id = n.id
    WHERE n.deleted_at IS NULL AND NOT n.test_run
)

SELECT
    note_id,
    -- floor(us / 1e6) exactly: // truncates toward zero, so step down for negative remainders
    ((now_us // 1000000 - (now_us % 1000000 < 0)::BIGINT)
        - (created_us // 1000000 - (created_us % 1000000 < 0)::BIGINT)) / 86400.0 AS age_days,
    has_essence,
    thread_status,
    ((now_us // 1000000 - (now_us % 1000000 < 0)::BIGINT)
        - (access_us // 1000000 - (access_us % 1000000 < 0)::BIGINT)) / 86400.0
        AS last_access_days,
    stored_tier,
    row_id
FROM live
