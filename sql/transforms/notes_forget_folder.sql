-- Forget one registered notes folder ($key, $path): its live notes are marked deleted (they
-- leave ask, context and health; an ingest of the folder brings them back under the same
-- ids), the problems recorded for its files are dropped, and the folder is no longer
-- registered. Registered folders nested inside it keep their notes and problems ($skip).
-- Returns the number of notes marked deleted.
DELETE FROM ingest_errors
WHERE starts_with(source, $path || '/')
  AND len(list_filter($skip::VARCHAR[], s -> starts_with(source, s))) = 0;

DELETE FROM note_folders WHERE key = $key;

UPDATE notes
SET deleted_at = $now
WHERE deleted_at IS NULL AND starts_with(id, $key || '/');
