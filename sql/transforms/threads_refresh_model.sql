-- Recompute activity, size and status of model-detected threads from their members.
UPDATE threads AS t
SET last_activity_at = s.activity_at,
    note_count = s.members,
    status = CASE WHEN s.activity_at >= $now::TIMESTAMPTZ - to_days($active_days)
                  THEN 'active' ELSE 'archived' END
FROM (
    SELECT tn.thread_id,
           max(greatest(n.updated_at, coalesce(p.last_accessed_at, n.updated_at))) AS activity_at,
           count(*) AS members
    FROM thread_notes AS tn
    JOIN notes AS n ON n.id = tn.note_id AND n.deleted_at IS NULL
    LEFT JOIN processed_notes AS p ON p.note_id = n.id
    GROUP BY tn.thread_id
) AS s
WHERE t.id = s.thread_id AND t.origin = 'model';
