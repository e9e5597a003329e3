-- Seed 000's computeTier for every note at once (same rules as selene_dag.notes.fidelity).
-- Computes the tiers into the temp table fidelity_new; fidelity_write.sql stores them.
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
