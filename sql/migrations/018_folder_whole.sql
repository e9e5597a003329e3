-- 018_folder_whole: whether a notes folder was ingested whole, or registered because a
-- file or an archive in it was ingested alone. Only a folder ingested whole holds the
-- folders below it: one registered for a file (a download in ~/Downloads) made every later
-- folder under it one of its sub-folders (a vault moved there was not recognised, its
-- notes stored twice). Folders registered before this column hold theirs, as they did.
ALTER TABLE note_folders ADD COLUMN whole BOOLEAN DEFAULT true;
