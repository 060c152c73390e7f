-- +goose Up

-- Person erasure scrubs the change feed (workspace_change, migration 00019) after the mirror
-- store and before the inbox stores, with a receipt of its own: store 'change-feed'.
ALTER TABLE inbox_erasure_receipt DROP CONSTRAINT inbox_erasure_receipt_store_check;
ALTER TABLE inbox_erasure_receipt ADD CONSTRAINT inbox_erasure_receipt_store_check
    CHECK (store IN ('workspace-inbox', 'installation-inbox', 'change-feed') OR store ~ '^[a-z][a-z0-9_]{1,30}-mirror$');

-- +goose Down
DELETE FROM inbox_erasure_receipt WHERE store = 'change-feed';
ALTER TABLE inbox_erasure_receipt DROP CONSTRAINT inbox_erasure_receipt_store_check;
ALTER TABLE inbox_erasure_receipt ADD CONSTRAINT inbox_erasure_receipt_store_check
    CHECK (store IN ('workspace-inbox', 'installation-inbox') OR store ~ '^[a-z][a-z0-9_]{1,30}-mirror$');
