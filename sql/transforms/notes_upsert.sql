-- Upsert the staged notes (relation `incoming`) into `notes`.
-- A row is rewritten only when something the source carries changed, so re-ingesting an
-- unchanged folder touches nothing; a note that comes back after deletion is restored.
-- A staged note whose content hash is the stored one carries no title or content (NULL):
-- only its other fields can have changed, and the stored text stays.
-- The rows to write are chosen by the join's filter: ON CONFLICT then sees only those,
-- not every unchanged note of a large folder (0.5 s at 10,000 notes, as long to commit).
-- A date the source does not give (NULL) is found once. A note without a creation date
-- keeps the stored one, or takes its update date, its file's mtime (`modified_at`, markdown)
-- or the time of the ingest that first stores it. One without an update date keeps the
-- stored one while its content is the same (an mtime moved by a checkout is no update),
-- else takes its file's mtime or the time of the ingest that reads the new content; never
-- a time at or before its stored update (a file copied again gives its notes their creation
-- date for the copy's mtime: an edited one would have gone back to it).
-- A new note without a creation date whose text a note of the folder gone in this same
-- ingest held (its file renamed or moved: `moved`, by processed_moved.sql's rule, the same
-- text whole or a body of $min_chars or more) takes that note's dates: a file touched,
-- synced or copied before the rename has another mtime, and the note came back as new,
-- fresh, without its analysis. Not a note deleted before (a template's text written again
-- today is a new note).
WITH moved AS (
    SELECT i.id, o.created_at, o.updated_at
    FROM incoming AS i
    JOIN notes AS o
      ON o.content = i.content
     AND (o.content_hash = i.content_hash OR length(i.content) >= $min_chars)
    WHERE i.created_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM notes AS n WHERE n.id = i.id)
      AND o.id <> i.id AND NOT o.test_run
      AND o.deleted_at IS NULL
      AND starts_with(o.source, $root_prefix) AND o.id NOT IN (SELECT id FROM seen_ids)
    QUALIFY row_number() OVER (PARTITION BY i.id ORDER BY o.id) = 1
)
INSERT INTO notes (id, title, content, content_hash, created_at, updated_at, source, topic,
                   tags, test_run, deleted_at, ingested_at)
SELECT i.id, i.title, i.content, i.content_hash,
       coalesce(i.created_at, n.created_at, m.created_at, i.updated_at, i.modified_at, $now),
       coalesce(i.updated_at,
                CASE WHEN n.content_hash = i.content_hash THEN n.updated_at END,
                m.updated_at,
                CASE WHEN i.modified_at > n.updated_at OR n.updated_at IS NULL
                     THEN i.modified_at END,
                $now),
       i.source, i.topic, i.tags, i.test_run, NULL, $now
FROM incoming AS i
LEFT JOIN notes AS n USING (id)
LEFT JOIN moved AS m USING (id)
WHERE n.id IS NULL
   OR n.content_hash <> i.content_hash
   OR n.deleted_at IS NOT NULL
   OR n.created_at <> i.created_at
   OR n.updated_at <> i.updated_at
   OR n.source <> i.source
   OR n.topic IS DISTINCT FROM i.topic
   OR n.tags IS DISTINCT FROM i.tags
   OR n.test_run <> i.test_run
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
    ingested_at  = excluded.ingested_at;
