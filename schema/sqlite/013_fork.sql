-- 013: forks (POST /v1/sheets/{id}/fork). Column-by-column notes: schema/README.md
-- "013".

-- The sheet this one was forked from; NULL for a sheet made by POST /v1/sheets. Cells
-- reads before first_seq go on to it (the fork's history before its shared snapshot
-- is the source's).
ALTER TABLE sheet ADD COLUMN fork_of TEXT;

-- The fork's first_seq when it was made: seqs before it are the source's history.
-- Once the fork's own truncation moves first_seq past it, reads before first_seq are
-- Gone as on any sheet. NULL for a sheet that is not a fork.
ALTER TABLE sheet ADD COLUMN fork_seq INTEGER;

-- JSON array of the blob keys of other sheets this fork uses (the shared snapshot's
-- root and chunks, the external bodies of the entries it copied): while this row
-- exists, no truncation, retention run or sheet purge deletes them. NULL: none.
ALTER TABLE sheet ADD COLUMN shared_blobs TEXT;
