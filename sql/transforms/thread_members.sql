-- The newest members of every active thread (at most $limit each), newest first, with what
-- a model reading the thread again needs of each: title, text, creation time, essence,
-- theme, concepts and fidelity tier.
SELECT tn.thread_id, n.id, n.title, n.content, n.created_at, p.essence, p.primary_theme,
       p.concepts, p.fidelity_tier
FROM thread_notes AS tn
JOIN threads AS t ON t.id = tn.thread_id
JOIN notes AS n ON n.id = tn.note_id
LEFT JOIN processed_notes AS p ON p.note_id = n.id
WHERE t.status = 'active' AND n.deleted_at IS NULL AND NOT n.test_run
QUALIFY row_number() OVER (PARTITION BY tn.thread_id ORDER BY n.created_at DESC, n.id) <= $limit
ORDER BY tn.thread_id, n.created_at DESC, n.id;
