-- Seed 000's computeTier for every note at once (same rules as selene_dag.notes.fidelity):
-- one row (note_id, tier, stored_tier, row_id) per row of fidelity_inputs.sql, which the caller
-- inlines at the placeholder below. fidelity_write.sql stores the tiers that changed.
SELECT
    note_id,
    CASE
        WHEN age_days < 7 THEN 'full'
        WHEN NOT has_essence THEN 'full'
        WHEN thread_status = 'active' THEN 'high'
        WHEN age_days < 90 THEN 'high'
        WHEN thread_status = 'archived' AND last_access_days >= 180 THEN 'skeleton'
        ELSE 'summary'
    END AS tier,
    stored_tier,
    row_id
FROM (
    {inputs}
) AS inputs
