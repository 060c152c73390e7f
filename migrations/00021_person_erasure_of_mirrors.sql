-- +goose Up

-- Person erasure covers the providers' mirror stores (each provider's personal-data map, see
-- ARCHITECTURE.md), which run before the two inbox stores and have receipts of their own,
-- named '<provider>-mirror'.
ALTER TABLE inbox_erasure_receipt DROP CONSTRAINT inbox_erasure_receipt_store_check;
ALTER TABLE inbox_erasure_receipt ADD CONSTRAINT inbox_erasure_receipt_store_check
    CHECK (store IN ('workspace-inbox', 'installation-inbox') OR store ~ '^[a-z][a-z0-9_]{1,30}-mirror$');

-- The requests within a pass. A pass keeps the copy fence raised from its first store (the
-- mirror) to its last (the installation inbox), across several transactions; the flag is
-- lowered only when no request is left within a pass, so one server's erasure ending cannot
-- lower the fence while another server's is between its mirror and inbox stores.
ALTER TABLE inbox_erasure_fence ADD COLUMN holders bigint[] NOT NULL DEFAULT '{}';

-- Logins and e-mail addresses are matched case-insensitively (lower() on both sides); these
-- expression indexes serve that match on the large tables, per workspace as erasure asks.
CREATE INDEX ix_github_user_login_lower ON github_user (workspace_id, lower(login));
CREATE INDEX ix_github_commit_author_login_lower ON github_commit (workspace_id, lower(author_login));
CREATE INDEX ix_github_commit_author_email_lower ON github_commit (workspace_id, lower(author_email));
CREATE INDEX ix_github_commit_committer_email_lower ON github_commit (workspace_id, lower(committer_email));
CREATE INDEX ix_gitlab_member_username_lower ON gitlab_member (workspace_id, lower(username));
CREATE INDEX ix_gitlab_commit_author_email_lower ON gitlab_commit (workspace_id, lower(author_email));
-- What the person wrote alone, found by author.
CREATE INDEX ix_github_issue_comment_author ON github_issue_comment (workspace_id, author_id);
CREATE INDEX ix_github_review_comment_author ON github_review_comment (workspace_id, author_id);
CREATE INDEX ix_slack_message_user ON slack_message (workspace_id, user_id);

-- +goose Down
DROP INDEX ix_slack_message_user;
DROP INDEX ix_github_review_comment_author;
DROP INDEX ix_github_issue_comment_author;
DROP INDEX ix_gitlab_commit_author_email_lower;
DROP INDEX ix_gitlab_member_username_lower;
DROP INDEX ix_github_commit_committer_email_lower;
DROP INDEX ix_github_commit_author_email_lower;
DROP INDEX ix_github_commit_author_login_lower;
DROP INDEX ix_github_user_login_lower;
ALTER TABLE inbox_erasure_fence DROP COLUMN holders;
DELETE FROM inbox_erasure_receipt WHERE store NOT IN ('workspace-inbox', 'installation-inbox');
ALTER TABLE inbox_erasure_receipt DROP CONSTRAINT inbox_erasure_receipt_store_check;
ALTER TABLE inbox_erasure_receipt ADD CONSTRAINT inbox_erasure_receipt_store_check
    CHECK (store IN ('workspace-inbox', 'installation-inbox'));
