-- Seed 000's computeTier for every note at once (same rules as selene_dag.notes.fidelity).
-- Only rows whose tier changes are written; fidelity_evaluated_at is stamped on all of them.
CREATE OR REPLACE TEMP TABLE fidelity_new AS
WITH inputs AS (
    -- fidelity_inputs.sql inlined by the caller
    {inputs}
)
SELECT
    note_id,
    CASE
        WHEN age_days < 7 THEN 'full'
        WHEN NOT has_essence THEN 'full'
        WHEN thread_status = 'active' THEN 'high'
        WHEN age_days < 90 THEN 'high'
        WHEN thread_status = 'archived' AND last_access_days >= 180 THEN 'skeleton'
        ELSE 'summary'
    END AS tier
FROM inputs;

UPDATE processed_notes AS p
SET fidelity_tier = f.tier, fidelity_evaluated_at = $now
FROM fidelity_new AS f
WHERE p.note_id = f.note_id;
