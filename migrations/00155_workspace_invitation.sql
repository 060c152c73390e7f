-- Workspace invitations: a workspace ADMIN (or the instance administrator) invites a person by
-- login, and the account with that login accepts. An invitation is keyed by login, not by
-- account id, so inviting answers the same whether an account has the login or not (nothing
-- about accounts is learnt from it), and an account created later with the login can accept
-- while the invitation lasts.

-- +goose Up
CREATE TABLE workspace_invitation (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id  bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    login         text        NOT NULL,
    role          text        NOT NULL CHECK (role IN ('ADMIN', 'MEMBER')),
    -- The inviting account; NULL: the configured instance administrator token, which is no
    -- account (or an account that no longer exists).
    invited_by    bigint      REFERENCES account (id) ON DELETE SET NULL,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at    timestamptz NOT NULL,
    accepted_at   timestamptz,
    CONSTRAINT ck_workspace_invitation_expiry CHECK (expires_at > created_at)
);
-- One pending invitation per workspace and login: inviting again refreshes it (role, inviter,
-- expiry) instead of adding another. An expired one stays pending until then.
CREATE UNIQUE INDEX uq_workspace_invitation_pending ON workspace_invitation (workspace_id, login)
    WHERE accepted_at IS NULL;
-- The invited account's pending invitations (GET /api/me/invitations), in id order.
CREATE INDEX ix_workspace_invitation_login_pending ON workspace_invitation (login, id)
    WHERE accepted_at IS NULL;

-- +goose Down
DROP TABLE workspace_invitation;
