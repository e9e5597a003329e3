-- Bring search_docs in line with live notes and scored session chunks (search_index
-- asset). Only rows that differ from the stored ones are computed into a temporary table,
-- deleted and inserted, so one edited note rewrites one row (and nothing copies every
-- note's text to find it).
CREATE OR REPLACE TEMP VIEW _search_docs_src AS
SELECT
    'note:' || n.id AS doc_id,
    'note' AS kind,
    n.id AS ref,
    n.title AS title,
    n.content AS body,
    p.essence AS essence,
    'note ' || n.id AS citation,
    coalesce(p.fidelity_tier, 'full') AS fidelity_tier,
    n.updated_at AS updated_at,
    NULL::DOUBLE AS consensus,
    NULL::DOUBLE AS importance,
    NULL::VARCHAR AS session_key,
    NULL::INTEGER AS first_seq,
    NULL::INTEGER AS last_seq,
    sha256(left(n.content, 500)) AS dedup_key
FROM notes n
LEFT JOIN processed_notes p ON p.note_id = n.id
WHERE n.deleted_at IS NULL AND NOT n.test_run
UNION ALL
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

CREATE OR REPLACE TEMP TABLE _search_docs_new AS
SELECT s.* FROM _search_docs_src s
WHERE NOT EXISTS (
    SELECT 1 FROM search_docs d
    WHERE d.doc_id = s.doc_id
      AND d.kind IS NOT DISTINCT FROM s.kind
      AND d.ref IS NOT DISTINCT FROM s.ref
      AND d.title IS NOT DISTINCT FROM s.title
      AND d.body IS NOT DISTINCT FROM s.body
      AND d.essence IS NOT DISTINCT FROM s.essence
      AND d.citation IS NOT DISTINCT FROM s.citation
      AND d.fidelity_tier IS NOT DISTINCT FROM s.fidelity_tier
      AND d.updated_at IS NOT DISTINCT FROM s.updated_at
      AND d.consensus IS NOT DISTINCT FROM s.consensus
      AND d.importance IS NOT DISTINCT FROM s.importance
      AND d.session_key IS NOT DISTINCT FROM s.session_key
      AND d.first_seq IS NOT DISTINCT FROM s.first_seq
      AND d.last_seq IS NOT DISTINCT FROM s.last_seq
      AND d.dedup_key IS NOT DISTINCT FROM s.dedup_key
);

DELETE FROM search_docs
WHERE doc_id IN (SELECT doc_id FROM _search_docs_new)
   OR doc_id NOT IN (SELECT doc_id FROM _search_docs_src);

INSERT INTO search_docs SELECT * FROM _search_docs_new;

DROP TABLE _search_docs_new;
DROP VIEW _search_docs_src;
