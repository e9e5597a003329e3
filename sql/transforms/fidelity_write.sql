-- Store the tiers computed by fidelity_tiers.sql, stamping when they were evaluated.
UPDATE processed_notes AS p
SET fidelity_tier = f.tier, fidelity_evaluated_at = $now
FROM fidelity_new AS f
WHERE p.note_id = f.note_id;
