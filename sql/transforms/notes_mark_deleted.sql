-- Mark notes deleted whose source lies under the ingested path and that the ingest did not
-- see, unless their file failed to read (a broken file must not lose its notes).
UPDATE notes
SET deleted_at = $now
WHERE deleted_at IS NULL
  AND starts_with(source, $root_prefix)
  AND id NOT IN (SELECT id FROM incoming)
  AND source NOT IN (SELECT source FROM failed_files);
