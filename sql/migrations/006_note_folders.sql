-- 006_note_folders: note ids unique across every folder ingested into one home.
--
-- A note's id becomes '<folder key>/<id inside the folder>' (selene_dag/notes/folders.py):
-- the key is the folder's name, with '-2', '-3'... only when another folder of that name
-- was registered first. Folders are recorded here, so a key never changes once given.
--
-- Existing notes are moved to the new ids, and everything keyed by note id follows
-- (processed_notes, thread_notes, daily_summaries.note_ids); the search index sees new
-- ids and is rebuilt by the next ask or ingest. Legacy ids were paths relative to the
-- ingested folder, JSONL ids or front-matter ids, and the ingested folder was not stored,
-- so each note's folder is inferred from its source file:
--   * when the source path ends with '/<id>', the id was a relative path: the folder is
--     the source path without it;
--   * otherwise (JSONL or front-matter id) the folder is the source file's folder.
-- A folder inferred inside another inferred folder is merged into the outer one (ids
-- relative to it), as a later ingest of the outer folder would name them. The id inside
-- the folder is the path relative to that folder for path ids, the old id otherwise.
-- Should two old notes map to one new id (the same file ingested once from a folder and
-- once from its sub-folder), the live, most recently ingested one is kept.

CREATE TABLE note_folders (
    key       VARCHAR PRIMARY KEY,      -- first part of the ids of the folder's notes
    path      VARCHAR NOT NULL UNIQUE,  -- absolute path of the folder
    added_at  TIMESTAMPTZ NOT NULL DEFAULT current_timestamp
);

CREATE TEMP TABLE legacy_guess AS
SELECT
    id,
    source,
    deleted_at,
    ingested_at,
    ends_with(source, '/' || id) AS path_id,
    coalesce(nullif(CASE
        WHEN ends_with(source, '/' || id) THEN left(source, length(source) - length(id) - 1)
        ELSE regexp_replace(source, '/[^/]*$', '')
    END, ''), '/') AS folder
FROM notes;

CREATE TEMP TABLE legacy_outer AS
WITH inferred AS (SELECT DISTINCT folder FROM legacy_guess)
SELECT
    f.folder,
    (SELECT min_by(g.folder, length(g.folder)) FROM inferred AS g
     WHERE f.folder = g.folder OR starts_with(f.folder, g.folder || '/')) AS outer_folder
FROM inferred AS f;

-- Of two folders with one name, the one ingested first keeps the bare name.
INSERT INTO note_folders (key, path)
SELECT CASE WHEN rank = 1 THEN name ELSE name || '-' || rank END, outer_folder
FROM (
    SELECT outer_folder, name,
           row_number() OVER (PARTITION BY name ORDER BY first_ingest, outer_folder) AS rank
    FROM (
        SELECT o.outer_folder,
               coalesce(nullif(regexp_extract(o.outer_folder, '[^/]*$'), ''), 'root') AS name,
               min(g.ingested_at) AS first_ingest
        FROM legacy_outer AS o JOIN legacy_guess AS g USING (folder)
        GROUP BY o.outer_folder
    )
);

CREATE TEMP TABLE legacy_ids AS
SELECT
    g.id AS old_id,
    k.key || '/' || CASE WHEN g.path_id
                         THEN substr(g.source, length(rtrim(o.outer_folder, '/')) + 2)
                         ELSE g.id END AS new_id,
    g.deleted_at,
    g.ingested_at
FROM legacy_guess AS g
JOIN legacy_outer AS o USING (folder)
JOIN note_folders AS k ON k.path = o.outer_folder;

CREATE TEMP TABLE legacy_kept AS
SELECT old_id, new_id
FROM (
    SELECT old_id, new_id,
           row_number() OVER (PARTITION BY new_id
                              ORDER BY deleted_at IS NULL DESC, ingested_at DESC, old_id) AS n
    FROM legacy_ids
)
WHERE n = 1;

CREATE TEMP TABLE legacy_notes AS SELECT * FROM notes;
DELETE FROM notes;
INSERT INTO notes
SELECT l.* REPLACE (k.new_id AS id)
FROM legacy_notes AS l JOIN legacy_kept AS k ON k.old_id = l.id;

CREATE TEMP TABLE legacy_processed AS SELECT * FROM processed_notes;
DELETE FROM processed_notes;
INSERT INTO processed_notes
SELECT l.* REPLACE (k.new_id AS note_id)
FROM legacy_processed AS l JOIN legacy_kept AS k ON k.old_id = l.note_id;

CREATE TEMP TABLE legacy_thread_notes AS SELECT * FROM thread_notes;
DELETE FROM thread_notes;
INSERT INTO thread_notes
SELECT DISTINCT t.thread_id, k.new_id
FROM legacy_thread_notes AS t JOIN legacy_ids AS k ON k.old_id = t.note_id;

UPDATE daily_summaries AS d
SET note_ids = u.note_ids
FROM (
    SELECT day, list(coalesce(k.new_id, x.note_id) ORDER BY x.i) AS note_ids
    FROM (SELECT day, unnest(note_ids) AS note_id, generate_subscripts(note_ids, 1) AS i
          FROM daily_summaries) AS x
    LEFT JOIN legacy_ids AS k ON k.old_id = x.note_id
    GROUP BY day
) AS u
WHERE u.day = d.day;

DROP TABLE legacy_notes;
DROP TABLE legacy_processed;
DROP TABLE legacy_thread_notes;
DROP TABLE legacy_kept;
DROP TABLE legacy_ids;
DROP TABLE legacy_outer;
DROP TABLE legacy_guess;
