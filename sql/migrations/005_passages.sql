-- 005_passages: ask's retrieval unit. Every search document is cut into passages of
-- roughly 100-300 tokens along its own structure (search_index asset); each passage keeps
-- its document, title and character span in the document's body. Its BM25 index lives in
-- the schema fts_main_search_passages. Embeddings are keyed by the passage's content hash
-- (title + text), so a rebuild embeds only passages it has never seen.

CREATE TABLE search_passages (
    passage_id      VARCHAR PRIMARY KEY,   -- '<doc_id>#<ordinal>'
    doc_id          VARCHAR NOT NULL,      -- search_docs.doc_id
    kind            VARCHAR NOT NULL,      -- note | chunk
    ordinal         INTEGER NOT NULL,      -- position among the document's passages
    title           VARCHAR NOT NULL,
    text            VARCHAR NOT NULL,      -- body[char_start:char_end]
    char_start      INTEGER NOT NULL,
    char_end        INTEGER NOT NULL,
    tokens          INTEGER NOT NULL,      -- tokens of text in the build's model
    hash            VARCHAR NOT NULL       -- content hash of title + text
);

CREATE TABLE passage_embeddings (
    hash            VARCHAR PRIMARY KEY,   -- search_passages.hash
    model           VARCHAR NOT NULL,      -- embedding model name
    vec             FLOAT[256] NOT NULL    -- L2-normalized
);
