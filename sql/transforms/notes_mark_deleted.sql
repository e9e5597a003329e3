-- Mark deleted the notes of the ingested folder (id starting with $id_prefix) whose source
-- lies under the ingested path ($root_prefix) outside the registered folders nested in it
-- ($skip) and that the ingest did not see (`seen_ids`: every note read, staged or not),
-- unless their file failed to read (a broken file must not lose its notes; an archive that
-- failed covers the files inside it, `<archive>!/<path inside>`; a folder that could not
-- be listed, `<folder>/`, the files below it). Another folder's notes are never touched.
UPDATE notes
SET deleted_at = $now
WHERE deleted_at IS NULL
  AND starts_with(id, $id_prefix)
  AND starts_with(source, $root_prefix)
  AND len(list_filter($skip::VARCHAR[], s -> starts_with(source, s))) = 0
  AND id NOT IN (SELECT id FROM seen_ids)
  AND NOT EXISTS (
      SELECT 1 FROM failed_files AS f
      WHERE notes.source = f.source OR starts_with(notes.source, f.source || '!/')
         OR (ends_with(f.source, '/') AND starts_with(notes.source, f.source))
  );
