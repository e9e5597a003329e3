-- Upsert the staged notes (relation `incoming`) into `notes`.
-- A row is rewritten only when something the source carries changed, so re-ingesting an
-- unchanged folder touches nothing; a note that comes back after deletion is restored.
-- A staged note whose content hash is the stored one carries no title or content (NULL):
-- only its other fields can have changed, and the stored text stays.
INSERT INTO notes (id, title, content, content_hash, created_at, updated_at, source, topic,
                   tags, test_run, deleted_at, ingested_at)
SELECT id, title, content, content_hash, created_at, updated_at, source, topic,
       tags, test_run, NULL, $now
FROM incoming
ON CONFLICT (id) DO UPDATE SET
    title        = coalesce(excluded.title, notes.title),
    content      = coalesce(excluded.content, notes.content),
    content_hash = excluded.content_hash,
    created_at   = excluded.created_at,
    updated_at   = excluded.updated_at,
    source       = excluded.source,
    topic        = excluded.topic,
    tags         = excluded.tags,
    test_run     = excluded.test_run,
    deleted_at   = NULL,
    ingested_at  = excluded.ingested_at
WHERE notes.content_hash <> excluded.content_hash
   OR notes.deleted_at IS NOT NULL
   OR notes.created_at <> excluded.created_at
   OR notes.updated_at <> excluded.updated_at
   OR notes.source <> excluded.source
   OR notes.topic IS DISTINCT FROM excluded.topic
   OR notes.tags IS DISTINCT FROM excluded.tags
   OR notes.test_run <> excluded.test_run;
