-- +goose Up

-- The copy fence between person erasure and handler writes. Every fenced write transaction on
-- the dispatch goroutine takes FOR KEY SHARE SKIP LOCKED on this row and refuses to go on when
-- in_progress is set or the row is locked: it rolls back before waiting, so domain locks held by
-- handlers cannot deadlock erasure. Erasure first commits in_progress = true (an UPDATE of a
-- non-key column, compatible with KEY SHARE, so it does not wait for running steps), then takes
-- FOR UPDATE, which waits only for the steps that started before the flag, deletes, and clears
-- the flag. Without the flag a stream of short steps could starve erasure's FOR UPDATE.
CREATE TABLE inbox_erasure_fence (
    name         text PRIMARY KEY,
    in_progress  boolean NOT NULL DEFAULT false,
    erasure_id   bigint,
    changed_at   timestamptz NOT NULL DEFAULT now()
);
INSERT INTO inbox_erasure_fence (name) VALUES ('inbox');

-- +goose Down
DROP TABLE inbox_erasure_fence;
