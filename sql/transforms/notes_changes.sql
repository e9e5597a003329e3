-- Classify the staged notes against `notes` before the upsert: new, changed or unchanged.
SELECT
    count(*) FILTER (WHERE n.id IS NULL)                                      AS inserted,
    count(*) FILTER (WHERE n.id IS NOT NULL AND (n.content_hash <> i.content_hash
                                                 OR n.deleted_at IS NOT NULL)) AS changed,
    count(*) FILTER (WHERE n.id IS NOT NULL AND n.content_hash = i.content_hash
                                           AND n.deleted_at IS NULL)           AS unchanged
FROM incoming AS i
LEFT JOIN notes AS n USING (id);
