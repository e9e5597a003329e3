-- Store the analyses of a batch of notes (the rows of the registered frame _essence_rows,
-- one per note); fidelity and access columns are left as they are.
INSERT INTO processed_notes (note_id, concepts, primary_theme, essence, essence_at, source_hash, engine, analysis)
SELECT note_id, concepts, primary_theme, essence, essence_at, source_hash, engine, analysis FROM _essence_rows
ON CONFLICT (note_id) DO UPDATE SET
    concepts      = excluded.concepts,
    primary_theme = excluded.primary_theme,
    essence       = excluded.essence,
    essence_at    = CASE WHEN excluded.essence IS NOT DISTINCT FROM processed_notes.essence
                         THEN processed_notes.essence_at ELSE excluded.essence_at END,
    source_hash   = excluded.source_hash,
    engine        = excluded.engine,
    analysis      = excluded.analysis
