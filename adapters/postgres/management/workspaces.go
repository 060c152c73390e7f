package management

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/pgutil"
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
	// deleteWorkspace cascades to members, connections, subscriptions, inbox rows and steps.
	// It takes the row locks of the workspace's connections, so it waits for admissions that
	// hold them FOR SHARE and never removes a connection under a running admission.
	deleteWorkspace     = `DELETE FROM workspace WHERE id = $1`
	workspaceBySlug     = `SELECT ` + workspaceColumns + ` FROM workspace WHERE slug = $1`
	countWorkspaces     = `SELECT count(*) FROM workspace`
	listWorkspacesPaged = `SELECT ` + workspaceColumns + ` FROM workspace ORDER BY id LIMIT $1 OFFSET $2`

	memberRole    = `SELECT role FROM workspace_member WHERE workspace_id = $1 AND account_id = $2`
	setMemberRole = `
		INSERT INTO workspace_member (workspace_id, account_id, role) VALUES ($1, $2, $3)
		ON CONFLICT (workspace_id, account_id) DO UPDATE SET role = EXCLUDED.role
		RETURNING role`
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
	return ws, pgutil.Interpret("create workspace", err)
}

// DeleteWorkspace implements ports.WorkspaceStore.
func (w *Workspaces) DeleteWorkspace(ctx context.Context, id int64) error {
	tag, err := w.pool.Exec(ctx, deleteWorkspace, id)
	if err != nil {
		return pgutil.Interpret("delete workspace", err)
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
	return ws, pgutil.Interpret("workspace by slug", err)
}

// ListWorkspaces implements ports.WorkspaceStore.
func (w *Workspaces) ListWorkspaces(ctx context.Context, page ports.PageRequest) ([]ports.Workspace, int, error) {
	return pageOf(ctx, w.pool, "list workspaces", countWorkspaces, listWorkspacesPaged, nil,
		page.Size, page.Offset(), scanWorkspace)
}

// MemberRole implements ports.WorkspaceStore.
func (w *Workspaces) MemberRole(ctx context.Context, workspaceID, accountID int64) (workspace.Role, error) {
	var role string
	if err := w.pool.QueryRow(ctx, memberRole, workspaceID, accountID).Scan(&role); err != nil {
		return workspace.Role{}, pgutil.Interpret("member role", err)
	}
	return restoreRole(role)
}

// SetMemberRole implements ports.WorkspaceStore.
func (w *Workspaces) SetMemberRole(ctx context.Context, workspaceID, accountID int64, role workspace.Role) (ports.Membership, error) {
	var stored string
	err := w.pool.QueryRow(ctx, setMemberRole, workspaceID, accountID, role.String()).Scan(&stored)
	if isForeignKeyViolation(err) {
		return ports.Membership{}, fmt.Errorf("set member role: %w", ports.ErrNotFound)
	}
	if err != nil {
		return ports.Membership{}, pgutil.Interpret("set member role", err)
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
	return pgutil.WithTx(ctx, w.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(ctx context.Context, tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, lockAdmins, workspaceID)
		admins, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return pgutil.Interpret("lock workspace admins", err)
		}
		if len(admins) == 1 && admins[0] == accountID {
			return ports.Reject(ports.ErrConflict, "last-admin", "")
		}
		tag, err := tx.Exec(ctx, removeMember, workspaceID, accountID)
		if err != nil {
			return pgutil.Interpret("remove member", err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("member %d of workspace %d: %w", accountID, workspaceID, ports.ErrNotFound)
		}
		return nil
	})
}
