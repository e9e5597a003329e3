-- 017_analysis_version: which version of the offline analysis made a note's essence,
-- concepts and theme. A newer offline analysis (its algorithm version bumped) analyses
-- again the notes the older one made; they kept their older essence until they changed.
-- Rows from before this column are NULL: analysed again once by the offline engine.
ALTER TABLE processed_notes ADD COLUMN analysis VARCHAR;
