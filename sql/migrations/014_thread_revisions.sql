-- 014_thread_revisions: with a model engine, each active thread is read again over its
-- newest notes when they change (seed 000, reconsolidate-threads): its summary and "why"
-- are rewritten, and it records its direction, whether that shifted, and when and from
-- which notes (a hash of their ids and essences) it was last read.

ALTER TABLE threads ADD COLUMN direction VARCHAR;
ALTER TABLE threads ADD COLUMN shifted BOOLEAN;
ALTER TABLE threads ADD COLUMN reconsolidated_at TIMESTAMPTZ;
ALTER TABLE threads ADD COLUMN reconsolidated_source VARCHAR;
