package managementstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/workspace"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Workspaces is the store of accounts, workspaces and their members.
type Workspaces struct {
	pool *pgxpool.Pool
}

var (
	_ ports.AccountStore   = (*Workspaces)(nil)
	_ ports.WorkspaceStore = (*Workspaces)(nil)
)

// NewWorkspaces builds the account, workspace and member store.
func NewWorkspaces(pool *pgxpool.Pool) (*Workspaces, error) {
	if pool == nil {
		return nil, errors.New("postgres management: nil pool")
	}
	return &Workspaces{pool: pool}, nil
}

const (
	workspaceColumns = `id, slug, name, state, created_at`
	createWorkspace  = `INSERT INTO workspace (slug, name) VALUES ($1, $2) RETURNING ` + workspaceColumns
	// Workspace deletion runs in three steps so that it never holds a lock admission needs for
	// long (DeleteWorkspace). suspendWorkspace stops the workspace's claims (claimers take rows
	// of ACTIVE workspaces only) and names the workspace that exists.
	suspendWorkspace = `UPDATE workspace SET state = 'SUSPENDED' WHERE id = $1`
	// suspendWorkspaceConnections stops admission for the workspace: a suspended connection
	// admits no row. It takes the connections' row locks (waiting for admissions that hold them
	// FOR SHARE) for one short statement; config_version moves because the state changed.
	suspendWorkspaceConnections = `
		UPDATE connection SET state = 'SUSPENDED', config_version = config_version + 1, updated_at = now()
		WHERE workspace_id = $1 AND state = 'ACTIVE'`
	// deleteWorkspaceInboxBatch deletes up to $2 of the workspace's inbox rows (their steps
	// cascade) in one short transaction of its own; no connection row is locked.
	deleteWorkspaceInboxBatch = `
		DELETE FROM provider_event WHERE id IN (
			SELECT id FROM provider_event WHERE workspace_id = $1 ORDER BY id LIMIT $2)`
	// deleteWorkspace cascades to members, connections, subscriptions and the mirror. It takes
	// the row locks of the workspace's connections, so it waits for admissions that hold them
	// FOR SHARE and never removes a connection under a running admission; with the inbox gone
	// already it commits quickly.
	deleteWorkspace     = `DELETE FROM workspace WHERE id = $1`
	workspaceBySlug     = `SELECT ` + workspaceColumns + ` FROM workspace WHERE slug = $1`
	countWorkspaces     = `SELECT count(*) FROM workspace`
	listWorkspacesPaged = `SELECT ` + workspaceColumns + ` FROM workspace ORDER BY id LIMIT $1 OFFSET $2`

	// countMemberWorkspaces / listMemberWorkspacesPaged: the workspaces accountID is a member
	// of, on workspace_member's primary key (workspace_id, account_id) scanned by account.
	countMemberWorkspaces     = `SELECT count(*) FROM workspace_member WHERE account_id = $1`
	listMemberWorkspacesPaged = `SELECT w.id, w.slug, w.name, w.state, w.created_at FROM workspace w
		JOIN workspace_member m ON m.workspace_id = w.id AND m.account_id = $1
		ORDER BY w.id LIMIT $2 OFFSET $3`

	memberRole    = `SELECT role FROM workspace_member WHERE workspace_id = $1 AND account_id = $2`
	setMemberRole = `
		INSERT INTO workspace_member (workspace_id, account_id, role) VALUES ($1, $2, $3)
		ON CONFLICT (workspace_id, account_id) DO UPDATE SET role = EXCLUDED.role
		RETURNING role`
	// changeMemberRole changes an existing member's role and adds no one (a workspace ADMIN's
	// PUT): no row for an account that is no member, whether or not it exists. It locks the
	// member's row, as the upsert does, so a concurrent removal or change waits for it.
	changeMemberRole = `UPDATE workspace_member SET role = $3 WHERE workspace_id = $1 AND account_id = $2 RETURNING role`
)

func scanWorkspace(row pgx.CollectableRow) (ports.Workspace, error) {
	var w ports.Workspace
	err := row.Scan(&w.ID, &w.Slug, &w.Name, &w.State, &w.CreatedAt)
	return w, err
}

// CreateWorkspace implements ports.WorkspaceStore.
func (w *Workspaces) CreateWorkspace(ctx context.Context, slug, name string) (ports.Workspace, error) {
	rows, _ := w.pool.Query(ctx, createWorkspace, slug, name)
	ws, err := pgx.CollectExactlyOneRow(rows, scanWorkspace)
	return ws, sqlkit.Interpret("create workspace", err)
}

// DeleteInboxBatch is how many inbox rows one transaction of a workspace deletion deletes.
const DeleteInboxBatch = 1000

// DeleteWorkspace implements ports.WorkspaceStore. A single cascading DELETE held the
// workspace's connection rows locked while it deleted the whole inbox (minutes for a large
// one), stalling every provider's admission behind it. Instead:
//  1. one transaction suspends the workspace and its ACTIVE connections and commits: from then
//     on admission refuses the workspace's deliveries and claimers skip its rows;
//  2. its inbox is deleted DeleteInboxBatch rows per transaction, locking no connection;
//  3. the workspace is deleted, cascading to what is left (members, connections, routes,
//     mirror).
//
// A deletion that fails after step 1 leaves a suspended workspace; deleting it again finishes.
func (w *Workspaces) DeleteWorkspace(ctx context.Context, id int64) error {
	err := sqlkit.WithTx(ctx, w.pool, pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, suspendWorkspace, id)
		if err != nil {
			return sqlkit.Interpret("suspend workspace", err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("delete workspace %d: %w", id, ports.ErrNotFound)
		}
		if _, err := tx.Exec(ctx, suspendWorkspaceConnections, id); err != nil {
			return sqlkit.Interpret("suspend workspace connections", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for {
		tag, err := w.pool.Exec(ctx, deleteWorkspaceInboxBatch, id, DeleteInboxBatch)
		if err != nil {
			return sqlkit.Interpret("delete workspace inbox", err)
		}
		if tag.RowsAffected() < DeleteInboxBatch {
			break
		}
	}
	tag, err := w.pool.Exec(ctx, deleteWorkspace, id)
	if err != nil {
		return sqlkit.Interpret("delete workspace", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete workspace %d: %w", id, ports.ErrNotFound)
	}
	return nil
}

// WorkspaceBySlug implements ports.WorkspaceStore.
func (w *Workspaces) WorkspaceBySlug(ctx context.Context, slug string) (ports.Workspace, error) {
	rows, _ := w.pool.Query(ctx, workspaceBySlug, slug)
	ws, err := pgx.CollectExactlyOneRow(rows, scanWorkspace)
	return ws, sqlkit.Interpret("workspace by slug", err)
}

// ListWorkspaces implements ports.WorkspaceStore.
func (w *Workspaces) ListWorkspaces(ctx context.Context, page ports.PageRequest) ([]ports.Workspace, int, error) {
	return pageOf(ctx, w.pool, "list workspaces", countWorkspaces, listWorkspacesPaged, nil,
		page.Size, page.Offset(), scanWorkspace)
}

// MemberWorkspaces implements ports.WorkspaceStore.
func (w *Workspaces) MemberWorkspaces(ctx context.Context, accountID int64, page ports.PageRequest) ([]ports.Workspace, int, error) {
	return pageOf(ctx, w.pool, "list member workspaces", countMemberWorkspaces, listMemberWorkspacesPaged, []any{accountID},
		page.Size, page.Offset(), scanWorkspace)
}

// MemberRole implements ports.WorkspaceStore.
func (w *Workspaces) MemberRole(ctx context.Context, workspaceID, accountID int64) (workspace.Role, error) {
	var role string
	if err := w.pool.QueryRow(ctx, memberRole, workspaceID, accountID).Scan(&role); err != nil {
		return workspace.Role{}, sqlkit.Interpret("member role", err)
	}
	return restoreRole(role)
}

// SetMemberRole implements ports.WorkspaceStore. A change to a role other than ADMIN takes
// the same lock on the workspace's ADMIN rows as RemoveMember: two concurrent demotions (or a
// demotion and a removal) of the last two ADMINs serialise there, and the second, re-reading
// after the first commits, finds one ADMIN and refuses.
func (w *Workspaces) SetMemberRole(ctx context.Context, workspaceID, accountID int64, role workspace.Role) (ports.Membership, error) {
	return w.writeRole(ctx, setMemberRole, workspaceID, accountID, role)
}

// ChangeMemberRole implements ports.WorkspaceStore: SetMemberRole's rules with an UPDATE that
// adds no one, so a non-member and an unknown account both match no row.
func (w *Workspaces) ChangeMemberRole(ctx context.Context, workspaceID, accountID int64, role workspace.Role) (ports.Membership, error) {
	return w.writeRole(ctx, changeMemberRole, workspaceID, accountID, role)
}

// writeRole runs stmt (setMemberRole or changeMemberRole: $1 workspace, $2 account, $3 role,
// returning the stored role) after the last-ADMIN check.
func (w *Workspaces) writeRole(ctx context.Context, stmt string, workspaceID, accountID int64, role workspace.Role) (ports.Membership, error) {
	var stored string
	err := sqlkit.WithTx(ctx, w.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(ctx context.Context, tx pgx.Tx) error {
		if role != workspace.Admin {
			rows, _ := tx.Query(ctx, lockAdmins, workspaceID)
			admins, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			if err != nil {
				return sqlkit.Interpret("lock workspace admins", err)
			}
			if len(admins) == 1 && admins[0] == accountID {
				return ports.Reject(ports.ErrConflict, "last-admin", "")
			}
		}
		err := tx.QueryRow(ctx, stmt, workspaceID, accountID, role.String()).Scan(&stored)
		if isForeignKeyViolation(err) {
			return fmt.Errorf("set member role: %w", ports.ErrNotFound)
		}
		if err != nil {
			return sqlkit.Interpret("set member role", err)
		}
		return nil
	})
	if err != nil {
		return ports.Membership{}, err
	}
	r, err := restoreRole(stored)
	return ports.Membership{WorkspaceID: workspaceID, AccountID: accountID, Role: r}, err
}

func restoreRole(s string) (workspace.Role, error) {
	r, err := workspace.ParseRole(s)
	if err != nil {
		return workspace.Role{}, fmt.Errorf("restore member role: %w", err)
	}
	return r, nil
}

const (
	// lockAdmins locks the workspace's ADMIN rows: two removals of the last two ADMINs
	// serialise here, and the second, re-reading after the first commits, finds one ADMIN.
	lockAdmins   = `SELECT account_id FROM workspace_member WHERE workspace_id = $1 AND role = 'ADMIN' FOR UPDATE`
	removeMember = `DELETE FROM workspace_member WHERE workspace_id = $1 AND account_id = $2`
)

// RemoveMember implements ports.WorkspaceStore.
func (w *Workspaces) RemoveMember(ctx context.Context, workspaceID, accountID int64) error {
	return sqlkit.WithTx(ctx, w.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(ctx context.Context, tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, lockAdmins, workspaceID)
		admins, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return sqlkit.Interpret("lock workspace admins", err)
		}
		if len(admins) == 1 && admins[0] == accountID {
			return ports.Reject(ports.ErrConflict, "last-admin", "")
		}
		tag, err := tx.Exec(ctx, removeMember, workspaceID, accountID)
		if err != nil {
			return sqlkit.Interpret("remove member", err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("member %d of workspace %d: %w", accountID, workspaceID, ports.ErrNotFound)
		}
		return nil
	})
}

const (
	countMembers = `SELECT count(*) FROM workspace_member WHERE workspace_id = $1`
	// listMembers reads the workspace's members on workspace_member's primary key
	// (workspace_id, account_id), with each account's login.
	listMembers = `SELECT m.account_id, a.login, m.role, a.disabled_at IS NOT NULL FROM workspace_member m
		JOIN account a ON a.id = m.account_id
		WHERE m.workspace_id = $1 ORDER BY m.account_id LIMIT $2 OFFSET $3`
)

func scanMember(row pgx.CollectableRow) (ports.Member, error) {
	var (
		m    ports.Member
		role string
	)
	if err := row.Scan(&m.AccountID, &m.Login, &role, &m.Disabled); err != nil {
		return ports.Member{}, err
	}
	r, err := restoreRole(role)
	m.Role = r
	return m, err
}

// ListMembers implements ports.WorkspaceStore: the count and the page from one snapshot.
func (w *Workspaces) ListMembers(ctx context.Context, workspaceID int64, page ports.PageRequest) ([]ports.Member, int, error) {
	return pageOf(ctx, w.pool, "list members", countMembers, listMembers, []any{workspaceID}, page.Size, page.Offset(), scanMember)
}
