-- A note whose file was renamed or moved comes back under a new id (a note's id is its
-- path) with the same text, while the note of its old path is marked deleted. The new note,
-- not analysed yet, takes the deleted note's row: its analysis (analysed again as usual
-- when its title, and so its content hash, changed with the file's name) and when it was
-- last used, which its tier follows, so a move neither drops the note's tier nor asks a
-- model again. Both
-- must have the same creation date (a rename keeps the file's dates; a new note made from a
-- template's text has its own) and the same text: the whole note (content hash), or its
-- body when that is long enough (MOVED_MIN_CHARS) to tell one note from another. Of several
-- such deleted notes, the one used last gives its row. (`show` of the old note names the
-- new one by the same rule: selene_dag.retrieval.citations._why_gone.)
INSERT INTO processed_notes (note_id, concepts, primary_theme, essence, essence_at,
                             source_hash, engine, analysis, fidelity_tier,
                             fidelity_evaluated_at, last_accessed_at)
SELECT n.id, p.concepts, p.primary_theme, p.essence, p.essence_at, p.source_hash, p.engine,
       p.analysis, p.fidelity_tier, p.fidelity_evaluated_at, p.last_accessed_at
FROM notes AS n
JOIN notes AS old
  ON old.content = n.content
 AND old.created_at = n.created_at
 AND (old.content_hash = n.content_hash OR length(n.content) >= $min_chars)
JOIN processed_notes AS p ON p.note_id = old.id
WHERE n.deleted_at IS NULL AND NOT n.test_run
  AND old.deleted_at IS NOT NULL AND NOT old.test_run
  AND NOT EXISTS (SELECT 1 FROM processed_notes AS q WHERE q.note_id = n.id)
QUALIFY row_number() OVER (
    PARTITION BY n.id
    ORDER BY p.last_accessed_at DESC NULLS LAST, old.deleted_at DESC, old.id
) = 1
