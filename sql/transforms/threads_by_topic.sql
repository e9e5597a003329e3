-- Topic threads: one thread per theme (the source's topic, else the analysed primary theme).
-- Rebuilds membership of origin='topic' threads; model-detected threads are left alone.
CREATE OR REPLACE TEMP TABLE topic_members AS
SELECT 'topic:' || lower(trim(coalesce(n.topic, p.primary_theme))) AS thread_id,
       lower(trim(coalesce(n.topic, p.primary_theme)))            AS name,
       n.id AS note_id,
       greatest(n.updated_at, coalesce(p.last_accessed_at, n.updated_at)) AS activity_at
FROM notes AS n
LEFT JOIN processed_notes AS p ON p.note_id = n.id
WHERE n.deleted_at IS NULL AND NOT n.test_run
  AND coalesce(n.topic, p.primary_theme) IS NOT NULL
  AND trim(coalesce(n.topic, p.primary_theme)) <> '';

-- Only memberships that changed are written: one edited note touches its own rows.
DELETE FROM thread_notes AS t
WHERE t.thread_id IN (SELECT id FROM threads WHERE origin = 'topic')
  AND NOT EXISTS (
      SELECT 1 FROM topic_members AS m WHERE m.thread_id = t.thread_id AND m.note_id = t.note_id
  );

INSERT INTO thread_notes (thread_id, note_id)
SELECT DISTINCT m.thread_id, m.note_id FROM topic_members AS m
WHERE NOT EXISTS (
    SELECT 1 FROM thread_notes AS t WHERE t.thread_id = m.thread_id AND t.note_id = m.note_id
);

INSERT INTO threads (id, name, why, status, last_activity_at, note_count, origin)
SELECT thread_id,
       any_value(name),
       'Notes filed under the topic "' || any_value(name) || '".',
       CASE WHEN max(activity_at) >= $now::TIMESTAMPTZ - to_days($active_days)
            THEN 'active' ELSE 'archived' END,
       max(activity_at),
       count(DISTINCT note_id),
       'topic'
FROM topic_members
GROUP BY thread_id
ON CONFLICT (id) DO UPDATE SET
    status           = excluded.status,
    last_activity_at = excluded.last_activity_at,
    note_count       = excluded.note_count;

DELETE FROM threads
WHERE origin = 'topic' AND id NOT IN (SELECT DISTINCT thread_id FROM topic_members);

DROP TABLE topic_members;
