-- 004_search: the documents behind the full-text index (`search_index` asset) and the
-- version of the corpus the index was built from. The BM25 index itself lives in the
-- schema fts_main_search_docs, written by PRAGMA create_fts_index at build time.

CREATE TABLE search_docs (
    doc_id          VARCHAR PRIMARY KEY,   -- 'note:<id>' or 'chunk:<id>'
    kind            VARCHAR NOT NULL,      -- note | chunk
    ref             VARCHAR NOT NULL,      -- notes.id or chunks.id
    title           VARCHAR NOT NULL,
    body            VARCHAR NOT NULL,      -- note: content; chunk: chunk text
    essence         VARCHAR,               -- note essence (used as its summary)
    citation        VARCHAR NOT NULL,      -- 'note <id>' or '<session file> events a-b'
    fidelity_tier   VARCHAR,               -- notes only
    updated_at      TIMESTAMPTZ,           -- notes: updated_at; chunks: none
    consensus       DOUBLE,                -- chunks only, 0..10
    importance      DOUBLE,                -- chunks only, 0..100
    session_key     VARCHAR,
    first_seq       INTEGER,
    last_seq        INTEGER,
    dedup_key       VARCHAR NOT NULL       -- sha256 of the first 500 characters of body
);

CREATE TABLE search_index_meta (
    id              INTEGER PRIMARY KEY,   -- always 1
    corpus_version  VARCHAR NOT NULL,      -- corpus_version() when the index was built
    documents       INTEGER NOT NULL,
    built_at        TIMESTAMPTZ NOT NULL
);
