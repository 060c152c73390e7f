package management

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/pgutil"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Connections is the store of a workspace's connections and subscriptions. Every statement
// binds the workspace, so a connection id of another workspace reads as not found.
type Connections struct {
	pool  *pgxpool.Pool
	kinds kinds
}

var _ ports.ConnectionStore = (*Connections)(nil)

// NewConnections builds the connection store.
func NewConnections(pool *pgxpool.Pool, cfg Config) (*Connections, error) {
	if pool == nil {
		return nil, errors.New("postgres management: nil pool")
	}
	idx, err := cfg.index()
	if err != nil {
		return nil, err
	}
	return &Connections{pool: pool, kinds: idx}, nil
}

const (
	connectionColumns = `id, workspace_id, kind, provider, state, source_server_url, config, config_version, created_at, updated_at`
	createConnection  = `
		INSERT INTO connection (id, workspace_id, kind, provider, source_server_url, config, secret_ciphertext, source_key)
		OVERRIDING SYSTEM VALUE
		VALUES (COALESCE($8::bigint, nextval(pg_get_serial_sequence('connection', 'id'))), $1, $2, $3, $4, $5, $6, NULLIF($7, ''))
		RETURNING ` + connectionColumns
	// nextConnectionID reserves the id of a connection whose secret is sealed for it (the
	// secret's associated data) before the row is inserted.
	nextConnectionID = `SELECT nextval(pg_get_serial_sequence('connection', 'id'))`
	countConnections = `SELECT count(*) FROM connection WHERE workspace_id = $1`
	listConnections  = `
		SELECT ` + connectionColumns + ` FROM connection WHERE workspace_id = $1
		ORDER BY id LIMIT $2 OFFSET $3`
	connectionOfWorkspace = `SELECT ` + connectionColumns + ` FROM connection WHERE workspace_id = $1 AND id = $2`
	// lockConnection is the connection's lifecycle lock. FOR UPDATE conflicts with the FOR
	// SHARE that admission holds until its inbox insert commits, so a suspension or a route
	// change either commits before admission reads the state or waits for the insert.
	lockConnection = `SELECT ` + connectionColumns + ` FROM connection WHERE workspace_id = $1 AND id = $2 FOR UPDATE`
	setState       = `
		UPDATE connection SET state = $3, updated_at = now() WHERE workspace_id = $1 AND id = $2
		RETURNING ` + connectionColumns
	deleteSubscriptions = `DELETE FROM connection_subscription WHERE connection_id = $1 AND workspace_id = $2`
	insertSubscriptions = `
		INSERT INTO connection_subscription (connection_id, workspace_id, provider, resource_type, resource_id, name)
		SELECT $1, $2, $3, t, i, n FROM unnest($4::text[], $5::text[], $6::text[]) AS r(t, i, n)`
	// bumpConfigVersion tells an admission that waited on the lifecycle lock that the route it
	// read before waiting is stale (it compares the version again under the lock).
	bumpConfigVersion = `
		UPDATE connection SET config_version = config_version + 1, updated_at = now()
		WHERE workspace_id = $1 AND id = $2`
	subscriptionsOf = `
		SELECT resource_type, resource_id, name FROM connection_subscription
		WHERE connection_id = $1 AND workspace_id = $2 ORDER BY resource_type, resource_id`
)

func (s *Connections) scan(row pgx.CollectableRow) (ports.StoredConnection, error) {
	var (
		c              ports.StoredConnection
		kind, provider string
		state          string
	)
	if err := row.Scan(&c.ID, &c.WorkspaceID, &kind, &provider, &state, &c.SourceServerURL, &c.Config,
		&c.ConfigVersion, &c.CreatedAt, &c.UpdatedAt); err != nil {
		return c, err
	}
	var err error
	if c.Kind, err = s.kinds.restore(kind, provider); err != nil {
		return c, err
	}
	if c.State, err = connection.ParseState(state); err != nil {
		return c, fmt.Errorf("restore connection %d: %w", c.ID, err)
	}
	if c.Config == nil {
		c.Config = map[string]any{}
	}
	return c, nil
}

// installationConflict is the answer when a live App connection already has the installation.
func installationConflict() error {
	return ports.Reject(ports.ErrConflict, "installation-already-connected", "")
}

// CreateConnection implements ports.ConnectionStore.
func (s *Connections) CreateConnection(ctx context.Context, nc ports.NewConnection) (ports.StoredConnection, error) {
	var id *int64
	if nc.SealSecret != nil {
		var next int64
		if err := s.pool.QueryRow(ctx, nextConnectionID).Scan(&next); err != nil {
			return ports.StoredConnection{}, pgutil.Interpret("reserve connection id", err)
		}
		sealed, err := nc.SealSecret(next)
		if err != nil {
			return ports.StoredConnection{}, err
		}
		id, nc.SecretCiphertext = &next, sealed
	}
	rows, _ := s.pool.Query(ctx, createConnection, nc.WorkspaceID, nc.Kind.String(), nc.Kind.Provider().String(),
		nc.SourceServerURL, nc.Config, nc.SecretCiphertext, nc.SourceKey, id)
	c, err := pgx.CollectExactlyOneRow(rows, s.scan)
	switch {
	case isUniqueViolationOf(err, installationConstraint):
		return ports.StoredConnection{}, installationConflict()
	case isForeignKeyViolation(err):
		return ports.StoredConnection{}, fmt.Errorf("create connection: workspace %d: %w", nc.WorkspaceID, ports.ErrNotFound)
	}
	return c, pgutil.Interpret("create connection", err)
}

// ListConnections implements ports.ConnectionStore.
func (s *Connections) ListConnections(ctx context.Context, workspaceID int64, page ports.PageRequest) ([]ports.StoredConnection, int, error) {
	return pageOf(ctx, s.pool, "list connections", countConnections, listConnections, []any{workspaceID},
		page.Size, page.Offset(), s.scan)
}

// Connection implements ports.ConnectionStore.
func (s *Connections) Connection(ctx context.Context, workspaceID, id int64) (ports.StoredConnection, error) {
	rows, _ := s.pool.Query(ctx, connectionOfWorkspace, workspaceID, id)
	c, err := pgx.CollectExactlyOneRow(rows, s.scan)
	return c, pgutil.Interpret("connection", err)
}

// lock takes the lifecycle lock of the workspace's connection in tx and reads it.
func (s *Connections) lock(ctx context.Context, tx pgx.Tx, workspaceID, id int64) (ports.StoredConnection, error) {
	rows, _ := tx.Query(ctx, lockConnection, workspaceID, id)
	c, err := pgx.CollectExactlyOneRow(rows, s.scan)
	return c, pgutil.Interpret("lock connection", err)
}

// Transition implements ports.ConnectionStore. READ COMMITTED: after waiting for the lock,
// PostgreSQL hands the statement the row's latest committed version, which next then judges.
func (s *Connections) Transition(ctx context.Context, workspaceID, id int64,
	next func(current connection.State) (connection.State, error),
) (out ports.StoredConnection, err error) {
	err = pgutil.WithTx(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(ctx context.Context, tx pgx.Tx) error {
		c, err := s.lock(ctx, tx, workspaceID, id)
		if err != nil {
			return err
		}
		to, err := next(c.State)
		if err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, setState, workspaceID, id, to.String())
		out, err = pgx.CollectExactlyOneRow(rows, s.scan)
		if isUniqueViolationOf(err, installationConstraint) {
			return installationConflict()
		}
		return pgutil.Interpret("set connection state", err)
	})
	if err != nil {
		return ports.StoredConnection{}, err
	}
	return out, nil
}

// ReplaceSubscriptions implements ports.ConnectionStore.
func (s *Connections) ReplaceSubscriptions(ctx context.Context, workspaceID, id int64, resources []ports.SubscribedResource) (set []ports.SubscribedResource, err error) {
	types := make([]string, len(resources))
	ids := make([]string, len(resources))
	names := make([]string, len(resources))
	for i, r := range resources {
		types[i], ids[i], names[i] = r.Type, r.ID, r.Name
	}
	err = pgutil.WithTx(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(ctx context.Context, tx pgx.Tx) error {
		c, err := s.lock(ctx, tx, workspaceID, id)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, deleteSubscriptions, id, workspaceID); err != nil {
			return pgutil.Interpret("delete subscriptions", err)
		}
		if len(resources) > 0 {
			if _, err := tx.Exec(ctx, insertSubscriptions, id, workspaceID, c.Kind.Provider().String(), types, ids, names); err != nil {
				return pgutil.Interpret("insert subscriptions", err)
			}
		}
		if _, err := tx.Exec(ctx, bumpConfigVersion, workspaceID, id); err != nil {
			return pgutil.Interpret("bump config version", err)
		}
		rows, _ := tx.Query(ctx, subscriptionsOf, id, workspaceID)
		set, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (ports.SubscribedResource, error) {
			var r ports.SubscribedResource
			err := row.Scan(&r.Type, &r.ID, &r.Name)
			return r, err
		})
		return pgutil.Interpret("read subscriptions", err)
	})
	if err != nil {
		return nil, err
	}
	if set == nil {
		set = []ports.SubscribedResource{}
	}
	return set, nil
}
