-- 020_session_moves: a session retired because its transcript moved to another folder (its
-- key comes from the path) and the key it is stored under now, so that a citation copied
-- before the move still opens its events (`show`).
CREATE TABLE session_moves (
    old_key   VARCHAR PRIMARY KEY,
    new_key   VARCHAR NOT NULL,
    moved_at  TIMESTAMPTZ NOT NULL DEFAULT current_timestamp
);
