-- One row per live, non-test note: the inputs of seed 000's tier rules as of $now.
-- Thread status of a note: 'active' if any of its threads is active, else 'archived' if it
-- is in a thread, else NULL. Last access falls back to the note's age (the seed's proxy).
SELECT
    n.id AS note_id,
    date_diff('second', n.created_at, $now::TIMESTAMPTZ) / 86400.0 AS age_days,
    (p.essence IS NOT NULL) AS has_essence,
    CASE
        WHEN bool_or(t.status = 'active') THEN 'active'
        WHEN count(t.id) > 0 THEN 'archived'
    END AS thread_status,
    date_diff('second', coalesce(p.last_accessed_at, n.created_at), $now::TIMESTAMPTZ) / 86400.0
        AS last_access_days
FROM notes AS n
JOIN processed_notes AS p ON p.note_id = n.id
LEFT JOIN thread_notes AS tn ON tn.note_id = n.id
LEFT JOIN threads AS t ON t.id = tn.thread_id
WHERE n.deleted_at IS NULL AND NOT n.test_run
GROUP BY n.id, n.created_at, p.essence, p.last_accessed_at
