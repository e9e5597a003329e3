-- Store the tiers of fidelity_tiers.sql (inlined by the caller below) for the notes whose
-- tier changed, stamping fidelity_evaluated_at with $now on those rows only, as seed 000's
-- evaluate-fidelity does: fidelity_evaluated_at is when the tier last changed.
-- The change filter sits inside the subquery, so it runs before the join with the target
-- and a steady-state daily run (few changes) joins and writes almost nothing.
-- The statement's row count is the number of changed notes.
UPDATE processed_notes AS p
SET fidelity_tier = f.tier, fidelity_evaluated_at = $now
FROM (
    SELECT row_id, tier
    FROM (
        {tiers}
    ) AS tiers
    WHERE tier IS DISTINCT FROM stored_tier
) AS f
WHERE p.rowid = f.row_id
