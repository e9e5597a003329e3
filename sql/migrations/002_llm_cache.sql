-- 002_llm_cache: content-addressed cache of every model call (selene_dag/llm/cache.py).
-- key = sha256(engine, model, task, recipe (prompt name@version:sha or algorithm version),
-- canonical input JSON). A hit makes no call; each row is committed as soon as it is made.

CREATE TABLE llm_cache (
    key            VARCHAR PRIMARY KEY,
    engine         VARCHAR NOT NULL,         -- 'extractive' | 'ollama'
    model          VARCHAR NOT NULL,         -- e.g. 'mistral:7b', or the extractive algorithm id
    task           VARCHAR NOT NULL,         -- analyze_note, detect_threads, digest_thread, ...
    recipe         VARCHAR NOT NULL,         -- prompt template name@version:sha12, or algorithm version
    output         VARCHAR NOT NULL,         -- JSON text of the result
    created_at     TIMESTAMPTZ NOT NULL DEFAULT current_timestamp,
    duration_ms    DOUBLE,
    prompt_tokens  INTEGER,
    output_tokens  INTEGER
);

CREATE INDEX llm_cache_engine_model_task ON llm_cache (engine, model, task);
