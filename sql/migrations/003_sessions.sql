-- 003_sessions: AI coding-agent sessions (seed 003): files, normalized events, chunks,
-- assessments, consensus scores and distilled session files.
-- Partition tables carry session_key (the Dagster partition key) and are rewritten per key
-- with delete-then-insert inside one transaction, so they have no primary keys.

CREATE TABLE session_files (
    session_key        VARCHAR NOT NULL,     -- <platform>-<sha1(path)[:12]>, the partition key
    path               VARCHAR NOT NULL,
    platform           VARCHAR NOT NULL,     -- claude | codex | gemini
    project            VARCHAR,              -- working directory (Gemini: project hash)
    source_session_id  VARCHAR,              -- the tool's own session id
    size               BIGINT NOT NULL,
    mtime              DOUBLE NOT NULL,      -- seconds since the epoch
    sha256             VARCHAR NOT NULL,
    events             INTEGER NOT NULL,
    parse_errors       INTEGER NOT NULL,
    error_samples      VARCHAR[],
    duplicates         INTEGER NOT NULL DEFAULT 0,   -- records skipped as twins (Codex)
    redactions         INTEGER NOT NULL DEFAULT 0,   -- secrets replaced by [REDACTED:kind]
    scanned_at         TIMESTAMPTZ NOT NULL,
    parsed_at          TIMESTAMPTZ NOT NULL
);

CREATE TABLE session_events (
    session_key    VARCHAR NOT NULL,
    seq            INTEGER NOT NULL,
    session_id     VARCHAR,
    platform       VARCHAR NOT NULL,
    ts             VARCHAR,                  -- ISO-8601 as written by the tool
    role           VARCHAR NOT NULL,
    kind           VARCHAR NOT NULL,
    text           VARCHAR NOT NULL,         -- redacted
    tool_name      VARCHAR,
    file_paths     VARCHAR[],
    is_error       BOOLEAN NOT NULL,
    is_sidechain   BOOLEAN NOT NULL,
    tokens         INTEGER,
    importance     INTEGER NOT NULL,
    raw_type       VARCHAR,
    line           INTEGER
);
CREATE INDEX session_events_key ON session_events (session_key);

CREATE TABLE chunks (
    id               VARCHAR NOT NULL,
    session_key      VARCHAR NOT NULL,
    chunk_index      INTEGER NOT NULL,
    first_seq        INTEGER NOT NULL,
    last_seq         INTEGER NOT NULL,
    seqs             INTEGER[],
    text             VARCHAR NOT NULL,
    token_count      INTEGER NOT NULL,
    importance_avg   DOUBLE NOT NULL,
    event_count      INTEGER NOT NULL,
    first_ts         VARCHAR,
    last_ts          VARCHAR
);
CREATE INDEX chunks_key ON chunks (session_key);

CREATE TABLE assessments (
    chunk_id        VARCHAR NOT NULL,
    session_key     VARCHAR NOT NULL,
    assessor        VARCHAR NOT NULL,        -- extractive | importance | ollama | claude | codex | gemini
    relevance       INTEGER NOT NULL,
    signal_density  INTEGER NOT NULL,
    reusability     INTEGER NOT NULL,
    overall         DOUBLE NOT NULL,
    reason          VARCHAR,
    created_at      TIMESTAMPTZ NOT NULL
);
CREATE INDEX assessments_key ON assessments (session_key);

CREATE TABLE chunk_scores (
    chunk_id        VARCHAR NOT NULL,
    session_key     VARCHAR NOT NULL,
    consensus       DOUBLE NOT NULL,         -- 0..10
    n_assessments   INTEGER NOT NULL,
    assessors       VARCHAR[],
    dropped         VARCHAR[],               -- outliers left out
    sufficient      BOOLEAN NOT NULL         -- at least 2 assessments
);
CREATE INDEX chunk_scores_key ON chunk_scores (session_key);

CREATE TABLE distilled_sessions (
    session_key      VARCHAR NOT NULL,       -- partition key, or 'project:<name>' for rollups
    project          VARCHAR,
    platform         VARCHAR NOT NULL,       -- platform of the generated file
    source_platform  VARCHAR NOT NULL,
    path             VARCHAR NOT NULL,
    tokens           INTEGER NOT NULL,       -- preamble + wrappers + chunk texts, target-model tokens
    budget           INTEGER NOT NULL,
    chunk_count      INTEGER NOT NULL,
    dropped_chunks   INTEGER NOT NULL,
    sort_mode        VARCHAR NOT NULL,
    min_consensus    DOUBLE NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL
);
