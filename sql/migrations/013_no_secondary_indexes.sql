-- 013_no_secondary_indexes: the plain (non-constraint) indexes are dropped. DuckDB 1.4–1.5
-- writes such an index corrupt when a process checkpoints a write-ahead log it replayed
-- (duckdb/duckdb#23788; this store leaves small logs unfolded on purpose, see store.py):
-- lookups by session_key then found no row (`show` said a session "holds no events",
-- `distill report` lost its means) and deleting a session's rows to store them again
-- failed and invalidated the database. Primary keys and UNIQUE constraints are not
-- affected. Dropping the indexes also repairs a store they broke: the rows were intact.
-- Scans filtered on session_key with DuckDB's zone maps serve the same lookups.

DROP INDEX IF EXISTS session_events_key;
DROP INDEX IF EXISTS chunks_key;
DROP INDEX IF EXISTS assessments_key;
DROP INDEX IF EXISTS chunk_scores_key;
DROP INDEX IF EXISTS llm_cache_engine_model_task;
