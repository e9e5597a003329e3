-- 021_session_redaction: the version of the redaction rules a session's stored event texts
-- were redacted with. A transcript read again (it grew) takes an event whose text is
-- stored as it stands under the same rules without redacting it again. Rows from before
-- this column are NULL: their texts are redacted again.
ALTER TABLE session_files ADD COLUMN redaction VARCHAR;
