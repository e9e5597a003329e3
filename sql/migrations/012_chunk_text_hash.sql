-- 012_chunk_text_hash: md5 of each chunk's text, written with the chunk, so the search
-- index's corpus version (checked before every ask) reads a stored hash per chunk instead
-- of hashing every chunk's text again. Rows written before this migration are hashed here.

ALTER TABLE chunks ADD COLUMN text_hash VARCHAR;
UPDATE chunks SET text_hash = md5(text);
