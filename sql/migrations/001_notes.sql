-- 001_notes: notes, their derived columns (seed 000), threads and daily summaries.

CREATE TABLE notes (
    id            VARCHAR PRIMARY KEY,      -- stable id: JSONL id, or path relative to the notes folder
    title         VARCHAR NOT NULL,
    content       VARCHAR NOT NULL,
    content_hash  VARCHAR NOT NULL,         -- sha256 of title + content
    created_at    TIMESTAMPTZ NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL,
    source        VARCHAR NOT NULL,         -- file the note was read from
    topic         VARCHAR,                  -- theme carried by the source (JSONL topic, front-matter)
    tags          VARCHAR[],
    test_run      BOOLEAN NOT NULL DEFAULT false,
    deleted_at    TIMESTAMPTZ,              -- set when the source file disappeared; row kept
    ingested_at   TIMESTAMPTZ NOT NULL DEFAULT current_timestamp
);

CREATE TABLE processed_notes (
    note_id                VARCHAR PRIMARY KEY,
    concepts               VARCHAR[],
    primary_theme          VARCHAR,
    essence                VARCHAR,
    essence_at             TIMESTAMPTZ,
    source_hash            VARCHAR,          -- notes.content_hash the analysis was made from
    engine                 VARCHAR,          -- engine:model that produced the analysis
    fidelity_tier          VARCHAR NOT NULL DEFAULT 'full',
    fidelity_evaluated_at  TIMESTAMPTZ,
    last_accessed_at       TIMESTAMPTZ
);

CREATE TABLE threads (
    id                VARCHAR PRIMARY KEY,
    name              VARCHAR NOT NULL,
    why               VARCHAR,
    summary           VARCHAR,
    status            VARCHAR NOT NULL DEFAULT 'active',   -- active | archived
    thread_digest     VARCHAR,
    digest_at         TIMESTAMPTZ,
    digest_source     VARCHAR,                              -- hash of the essences it was made from
    origin            VARCHAR NOT NULL DEFAULT 'topic',     -- topic | model
    last_activity_at  TIMESTAMPTZ,
    note_count        INTEGER NOT NULL DEFAULT 0,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT current_timestamp
);

CREATE TABLE thread_notes (
    thread_id  VARCHAR NOT NULL,
    note_id    VARCHAR NOT NULL,
    PRIMARY KEY (thread_id, note_id)
);

CREATE TABLE daily_summaries (
    day         DATE PRIMARY KEY,
    summary     VARCHAR NOT NULL,
    note_count  INTEGER NOT NULL,
    note_ids    VARCHAR[],
    created_at  TIMESTAMPTZ NOT NULL DEFAULT current_timestamp
);

CREATE TABLE ingest_errors (
    source    VARCHAR NOT NULL,
    line      INTEGER,
    error     VARCHAR NOT NULL,
    seen_at   TIMESTAMPTZ NOT NULL DEFAULT current_timestamp
);
