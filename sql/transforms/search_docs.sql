-- Bring search_docs in line with live notes and scored session chunks (search_index
-- asset). The documents are computed into a temporary table; only rows that differ from
-- the stored ones are deleted and inserted, so one edited note rewrites one row.
CREATE OR REPLACE TEMP TABLE _search_docs_new AS
SELECT * FROM search_docs WHERE false;

INSERT INTO _search_docs_new
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
    sha256(left(n.content, 500))
FROM notes n
LEFT JOIN processed_notes p ON p.note_id = n.id
WHERE n.deleted_at IS NULL AND NOT n.test_run;

INSERT INTO _search_docs_new
SELECT
    'chunk:' || c.id,
    'chunk',
    c.id,
    f.platform || ' session ' || coalesce(f.project, f.session_key),
    c.text,
    NULL,
    c.session_key || ' events ' || c.first_seq || '-' || c.last_seq,
    NULL,
    NULL,
    s.consensus,
    c.importance_avg,
    c.session_key,
    c.first_seq,
    c.last_seq,
    sha256(left(c.text, 500))
FROM chunks c
JOIN session_files f ON f.session_key = c.session_key
LEFT JOIN chunk_scores s ON s.chunk_id = c.id AND s.session_key = c.session_key;

DELETE FROM search_docs d
WHERE NOT EXISTS (
    SELECT 1 FROM _search_docs_new n
    WHERE n.doc_id = d.doc_id AND n IS NOT DISTINCT FROM d
);

INSERT INTO search_docs
SELECT * FROM _search_docs_new
WHERE doc_id NOT IN (SELECT doc_id FROM search_docs);

DROP TABLE _search_docs_new;
