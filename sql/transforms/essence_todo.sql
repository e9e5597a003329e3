-- Live, non-test notes that need (re)analysis: new, content changed since the analysis, or
-- still without an essence. Newest first (seed 000).
SELECT n.id, n.title, n.content, n.content_hash
FROM notes AS n
LEFT JOIN processed_notes AS p ON p.note_id = n.id
WHERE n.deleted_at IS NULL
  AND NOT n.test_run
  AND (p.note_id IS NULL OR p.source_hash IS DISTINCT FROM n.content_hash OR p.essence IS NULL)
ORDER BY n.created_at DESC, n.id
