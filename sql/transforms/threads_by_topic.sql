-- Topic threads: one thread per topic: the source's topic, else the note's first tag, else
-- the folder it sits in (a vault's project folder; not one that holds most of its ingested
-- folder's notes, as Logseq's pages/ or an archive's top folder, nor one of daily notes
-- mostly named by their day, as Logseq's journals/: that says nothing of a topic, and
-- today's note kept every day's note of years in one active thread), else the analysed
-- primary theme. Rebuilds membership of origin='topic' threads;
-- model-detected threads are left alone.
CREATE OR REPLACE TEMP TABLE topic_members AS
WITH live AS (
    SELECT n.*, string_split(n.id, '/') AS parts
    FROM notes AS n
    WHERE n.deleted_at IS NULL AND NOT n.test_run
),
placed AS (
    -- <folder key>/…/<folder>/<file>: the folder the file sits in.
    SELECT *, parts[1] AS home_folder,
           CASE WHEN len(parts) >= 3 THEN nullif(trim(parts[len(parts) - 1]), '') END AS folder
    FROM live
),
sized AS (
    SELECT *, count(*) OVER (PARTITION BY home_folder, folder) AS in_folder,
              count(*) OVER (PARTITION BY home_folder)         AS in_home,
              count(*) FILTER (WHERE regexp_matches(parts[len(parts)], '^\d{4}[-_.]\d{2}[-_.]\d{2}'))
                  OVER (PARTITION BY home_folder, folder)      AS dated_in_folder
    FROM placed
),
filed AS (
    SELECT s.id, s.updated_at, p.last_accessed_at,
           lower(trim(coalesce(
               nullif(trim(s.topic), ''),
               nullif(trim(ltrim(s.tags[1], '#')), ''),
               CASE WHEN 2 * s.in_folder <= s.in_home AND 2 * s.dated_in_folder <= s.in_folder
                    THEN s.folder END,
               p.primary_theme))) AS topic
    FROM sized AS s
    LEFT JOIN processed_notes AS p ON p.note_id = s.id
)
SELECT 'topic:' || topic AS thread_id,
       topic           AS name,
       id              AS note_id,
       greatest(updated_at, coalesce(last_accessed_at, updated_at)) AS activity_at
FROM filed
WHERE topic IS NOT NULL AND topic <> '';

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
