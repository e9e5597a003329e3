-- Bring search_docs in line with live notes and scored session chunks (search_index
-- asset). First the ids of the documents that are new or differ from their stored row: a
-- note by its content hash and the fields search_docs takes from processed_notes, so no
-- note's text is read to find that it is unchanged; a chunk by its row. Then only those
-- rows are computed, deleted and inserted: one edited note rewrites one row.
CREATE OR REPLACE TEMP VIEW _search_chunk_docs AS
SELECT
    'chunk:' || c.id AS doc_id,
    'chunk' AS kind,
    c.id AS ref,
    -- Gemini CLI names a project by a hash of its path: a reader learns nothing from it,
    -- and it costs about 60 tokens in every pack item's header.
    f.platform || ' session' || CASE
        WHEN regexp_full_match(f.project, '[0-9a-f]{32,}') THEN ''
        ELSE ' ' || coalesce(f.project, f.session_key) END AS title,
    c.text AS body,
    NULL::VARCHAR AS essence,
    c.session_key || ' events ' || c.first_seq || '-' || c.last_seq AS citation,
    NULL::VARCHAR AS fidelity_tier,
    NULL::TIMESTAMPTZ AS updated_at,
    s.consensus AS consensus,
    c.importance_avg AS importance,
    c.session_key AS session_key,
    c.first_seq AS first_seq,
    c.last_seq AS last_seq,
    sha256(left(c.text, 500)) AS dedup_key,
    NULL::VARCHAR AS source_hash,
    NULL::VARCHAR AS content_key
FROM chunks c
JOIN session_files f ON f.session_key = c.session_key
LEFT JOIN chunk_scores s ON s.chunk_id = c.id AND s.session_key = c.session_key;

CREATE OR REPLACE TEMP TABLE _search_docs_changed AS
SELECT n.id AS ref, 'note:' || n.id AS doc_id
FROM notes n
LEFT JOIN processed_notes p ON p.note_id = n.id
LEFT JOIN search_docs d ON d.doc_id = 'note:' || n.id
WHERE n.deleted_at IS NULL AND NOT n.test_run
  AND (d.source_hash IS DISTINCT FROM n.content_hash
       OR d.essence IS DISTINCT FROM p.essence
       OR d.fidelity_tier IS DISTINCT FROM coalesce(p.fidelity_tier, 'full')
       OR d.updated_at IS DISTINCT FROM n.updated_at)
UNION ALL
SELECT s.ref, s.doc_id
FROM _search_chunk_docs s
WHERE NOT EXISTS (
    SELECT 1 FROM search_docs d
    WHERE d.doc_id = s.doc_id
      AND d.title IS NOT DISTINCT FROM s.title
      AND d.body IS NOT DISTINCT FROM s.body
      AND d.citation IS NOT DISTINCT FROM s.citation
      AND d.consensus IS NOT DISTINCT FROM s.consensus
      AND d.importance IS NOT DISTINCT FROM s.importance
      AND d.session_key IS NOT DISTINCT FROM s.session_key
      AND d.first_seq IS NOT DISTINCT FROM s.first_seq
      AND d.last_seq IS NOT DISTINCT FROM s.last_seq
);

DELETE FROM search_docs
WHERE doc_id IN (SELECT doc_id FROM _search_docs_changed)
   OR (kind = 'note' AND ref NOT IN (
        SELECT id FROM notes WHERE deleted_at IS NULL AND NOT test_run))
   OR (kind = 'chunk' AND doc_id NOT IN (SELECT doc_id FROM _search_chunk_docs));

INSERT INTO search_docs
SELECT
    'note:' || n.id,
    'note',
    n.id,
    n.title,
    n.content,
    p.essence,
    'note ' || n.id,
    coalesce(p.fidelity_tier, 'full'),
    n.updated_at,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
    sha256(left(n.content, 500)),
    n.content_hash,
    NULL
FROM notes n
LEFT JOIN processed_notes p ON p.note_id = n.id
WHERE n.id IN (SELECT ref FROM _search_docs_changed WHERE starts_with(doc_id, 'note:'));

INSERT INTO search_docs
SELECT * FROM _search_chunk_docs
WHERE doc_id IN (SELECT doc_id FROM _search_docs_changed WHERE starts_with(doc_id, 'chunk:'));

-- The rows just written get their content key (md5 of citation, title and body: what
-- their stored token counts and passages are made from); only those rows' text is read.
UPDATE search_docs SET content_key = md5(citation || chr(31) || title || chr(31) || body)
WHERE content_key IS NULL;

DROP TABLE _search_docs_changed;
DROP VIEW _search_chunk_docs;
