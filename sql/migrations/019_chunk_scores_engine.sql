-- 019_chunk_scores_engine: the engine SELENE_LLM named when a chunk was rated (extractive
-- or ollama). After a switch, `distill run --all` rates the sessions again; a model whose
-- answers were all unusable leaves no assessment of its own, so the assessments alone
-- cannot say which engine rated. Rows from before this column are NULL: their assessments
-- tell.
ALTER TABLE chunk_scores ADD COLUMN engine VARCHAR;
