-- Live, non-test notes that need (re)analysis: new, content changed since the analysis,
-- still without an essence, or analysed by another engine than $engine (a model server
-- turned on, or another model: its notes are analysed again, a limited run at a time).
-- A note the model answered unusably was analysed offline "for" $engine: not again.
-- With the offline engine ($analysis: its analysis's version), notes an older version of
-- it analysed are analysed again too (a model's analyses stay until their note changes:
-- asking the model again for every note is not worth a prompt's new wording).
-- Newest first (seed 000), notes of another engine after the others.
SELECT n.id, n.title, n.content, n.content_hash
FROM notes AS n
LEFT JOIN processed_notes AS p ON p.note_id = n.id
WHERE n.deleted_at IS NULL
  AND NOT n.test_run
  AND (p.note_id IS NULL OR p.source_hash IS DISTINCT FROM n.content_hash OR p.essence IS NULL
       OR (p.engine IS DISTINCT FROM $engine AND NOT ends_with(coalesce(p.engine, ''), ' for ' || $engine))
       OR ($analysis IS NOT NULL AND p.engine = $engine AND p.analysis IS DISTINCT FROM $analysis))
ORDER BY (p.note_id IS NOT NULL AND p.source_hash = n.content_hash AND p.essence IS NOT NULL),
         n.created_at DESC, n.id
