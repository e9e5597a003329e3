-- Classify the staged notes against `notes` before the upsert: new, changed or unchanged.
-- A note is changed when its content, or a field what follows reads (dates, theme, tags,
-- test flag), differs, or when it comes back after deletion. A note only read from another
-- file (a newer export of the same notes) is rewritten but not changed.
WITH classified AS (
    SELECT n.id IS NULL AS is_new,
           n.id IS NOT NULL AND (
               n.content_hash <> i.content_hash
               OR n.deleted_at IS NOT NULL
               OR n.created_at <> i.created_at
               OR n.updated_at <> i.updated_at
               OR n.topic IS DISTINCT FROM i.topic
               OR n.tags IS DISTINCT FROM i.tags
               OR n.test_run <> i.test_run
           ) AS is_changed
    FROM incoming AS i
    LEFT JOIN notes AS n USING (id)
)
SELECT
    count(*) FILTER (WHERE is_new)                                  AS inserted,
    count(*) FILTER (WHERE is_changed)                              AS changed,
    count(*) FILTER (WHERE NOT is_new AND NOT coalesce(is_changed, false)) AS unchanged
FROM classified;
