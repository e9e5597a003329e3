-- 015_session_token_reuse: token counts a re-read transcript takes over from its stored
-- rows instead of tokenizing again. A transcript grows while its agent runs, and each re-read
-- spent most of its time counting tokens of events it had counted before.
-- line_tokens: the count of the event's line in a chunk's text; token_model: the model both
-- counts of a file's events are in (NULL for rows written before: counted again).

ALTER TABLE session_events ADD COLUMN line_tokens INTEGER;
ALTER TABLE session_files ADD COLUMN token_model VARCHAR;
