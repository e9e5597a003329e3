-- A registered notes folder moved from $old to $new (both ending in '/'): its row in
-- note_folders, and those of folders registered inside it, take the new path, and the
-- sources of the notes and problems under it follow. Ids do not change.
UPDATE note_folders
SET path = rtrim($new, '/') || substr(path, length(rtrim($old, '/')) + 1)
WHERE path = rtrim($old, '/') OR starts_with(path, $old);

UPDATE notes
SET source = $new || substr(source, length($old) + 1)
WHERE starts_with(source, $old);

UPDATE ingest_errors
SET source = $new || substr(source, length($old) + 1)
WHERE starts_with(source, $old);
