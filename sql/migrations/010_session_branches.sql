-- 010_session_branches: rewound branches and sub-agent transcripts.
-- session_events.abandoned marks events of a branch the user rewound away from (kept, but
-- not chunked or scored); session_files.parent_session_id links a sub-agent transcript to
-- the session that started it. Timestamps in session_events.ts are ISO-8601 UTC from now on.

ALTER TABLE session_events ADD COLUMN abandoned BOOLEAN DEFAULT false;
ALTER TABLE session_files ADD COLUMN parent_session_id VARCHAR;
