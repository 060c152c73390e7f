package managementstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/workspace"
	"github.com/hephaestus-dev/hephaestus/ports"
)

const (
	// invite stores the invitation of $2 (a login, which need not name an account) to
	// workspace $1, or refreshes the pending one (role, inviter, creation and expiry): the
	// upsert takes the pending row's lock, so two invitations of one login at once leave one
	// row. Nothing is stored when an account with the login is a member already. The statement
	// is the same for every login, existing or not, so neither its answer nor its work tells
	// the inviting ADMIN whether an account has it.
	invite = `
		INSERT INTO workspace_invitation (workspace_id, login, role, invited_by, created_at, expires_at)
		SELECT $1, $2, $3, $4, clock_timestamp(), clock_timestamp() + make_interval(secs => $5)
		WHERE NOT EXISTS (
			SELECT 1 FROM workspace_member m JOIN account a ON a.id = m.account_id
			WHERE m.workspace_id = $1 AND a.login = $2)
		ON CONFLICT (workspace_id, login) WHERE accepted_at IS NULL DO UPDATE
		SET role = EXCLUDED.role, invited_by = EXCLUDED.invited_by,
			created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at`

	// countPendingInvitations / listPendingInvitations: the pending invitations of account $1's
	// login that have not expired at the transaction's start (now(), so the count and the page
	// of one snapshot agree), on ix_workspace_invitation_login_pending.
	countPendingInvitations = `
		SELECT count(*) FROM account a
		JOIN workspace_invitation i ON i.login = a.login AND i.accepted_at IS NULL AND i.expires_at > now()
		WHERE a.id = $1`
	listPendingInvitations = `
		SELECT i.id, w.id, w.slug, w.name, w.state, w.created_at, i.role, coalesce(b.login, ''), i.created_at, i.expires_at
		FROM account a
		JOIN workspace_invitation i ON i.login = a.login AND i.accepted_at IS NULL AND i.expires_at > now()
		JOIN workspace w ON w.id = i.workspace_id
		LEFT JOIN account b ON b.id = i.invited_by
		WHERE a.id = $1 ORDER BY i.id LIMIT $2 OFFSET $3`

	// acceptInvitation marks invitation $1 accepted when it is a pending, unexpired invitation
	// of enabled account $2's login. The UPDATE takes the invitation's row lock: of two accepts
	// at once, the second re-reads the row after the first commits, finds it accepted and
	// matches nothing.
	acceptInvitation = `
		UPDATE workspace_invitation i SET accepted_at = clock_timestamp()
		FROM account a, workspace w
		WHERE i.id = $1 AND a.id = $2 AND a.login = i.login AND a.disabled_at IS NULL
		  AND w.id = i.workspace_id
		  AND i.accepted_at IS NULL AND i.expires_at > clock_timestamp()
		RETURNING w.id, w.slug, w.name, w.state, w.created_at, i.role`
	// joinWorkspace makes the account a member with the invitation's role. A member already
	// keeps its role (accepting never changes a membership, so it can never demote the last
	// ADMIN): the no-op update locks its row and returns the role it has.
	joinWorkspace = `
		INSERT INTO workspace_member (workspace_id, account_id, role) VALUES ($1, $2, $3)
		ON CONFLICT (workspace_id, account_id) DO UPDATE SET role = workspace_member.role
		RETURNING role`
)

// Invite implements ports.WorkspaceStore.
func (w *Workspaces) Invite(ctx context.Context, workspaceID int64, login string, role workspace.Role, invitedBy int64, lifetime time.Duration) error {
	var by *int64
	if invitedBy != ports.InstanceAdminAccountID {
		by = &invitedBy
	}
	_, err := w.pool.Exec(ctx, invite, workspaceID, login, role.String(), by, lifetime.Seconds())
	if isForeignKeyViolation(err) {
		return fmt.Errorf("invite to workspace %d: %w", workspaceID, ports.ErrNotFound)
	}
	return sqlkit.Interpret("invite", err)
}

func scanInvitation(row pgx.CollectableRow) (ports.Invitation, error) {
	var (
		inv  ports.Invitation
		role string
	)
	err := row.Scan(&inv.ID, &inv.Workspace.ID, &inv.Workspace.Slug, &inv.Workspace.Name, &inv.Workspace.State,
		&inv.Workspace.CreatedAt, &role, &inv.InvitedBy, &inv.CreatedAt, &inv.ExpiresAt)
	if err != nil {
		return ports.Invitation{}, err
	}
	inv.Role, err = restoreRole(role)
	return inv, err
}

// PendingInvitations implements ports.WorkspaceStore: the count and the page from one
// snapshot.
func (w *Workspaces) PendingInvitations(ctx context.Context, accountID int64, page ports.PageRequest) ([]ports.Invitation, int, error) {
	return pageOf(ctx, w.pool, "pending invitations", countPendingInvitations, listPendingInvitations, []any{accountID},
		page.Size, page.Offset(), scanInvitation)
}

// AcceptInvitation implements ports.WorkspaceStore: the invitation is marked accepted and the
// membership written in one transaction, so neither happens without the other.
func (w *Workspaces) AcceptInvitation(ctx context.Context, accountID, invitationID int64) (out ports.Joined, err error) {
	err = sqlkit.WithTx(ctx, w.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(ctx context.Context, tx pgx.Tx) error {
		var invited, stored string
		ws := &out.Workspace
		if err := tx.QueryRow(ctx, acceptInvitation, invitationID, accountID).
			Scan(&ws.ID, &ws.Slug, &ws.Name, &ws.State, &ws.CreatedAt, &invited); err != nil {
			return sqlkit.Interpret(fmt.Sprintf("accept invitation %d", invitationID), err)
		}
		err := tx.QueryRow(ctx, joinWorkspace, ws.ID, accountID, invited).Scan(&stored)
		if isForeignKeyViolation(err) {
			// The workspace was deleted since: its invitations went with it.
			return fmt.Errorf("join workspace %d: %w", ws.ID, ports.ErrNotFound)
		}
		if err != nil {
			return sqlkit.Interpret("join workspace", err)
		}
		role, err := restoreRole(stored)
		out.Membership = ports.Membership{WorkspaceID: ws.ID, AccountID: accountID, Role: role}
		return err
	})
	if err != nil {
		return ports.Joined{}, err
	}
	return out, nil
}
