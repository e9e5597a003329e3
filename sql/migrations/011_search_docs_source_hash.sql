-- 011_search_docs_source_hash: two keys on search_docs, written with each row.
-- source_hash: the note's content hash (notes.content_hash: title and content) its row was
-- made from, so that finding which notes changed compares hashes instead of every note's
-- text; NULL for session chunks (compared field by field).
-- content_key: md5 of citation, title and body (what the stored token counts and passages
-- of the document were made from), computed once per row instead of for every document
-- at every index build.
-- Rows written before this migration have neither: their notes are rewritten once, and the
-- next index build fills every missing content_key.

ALTER TABLE search_docs ADD COLUMN source_hash VARCHAR;
ALTER TABLE search_docs ADD COLUMN content_key VARCHAR;
