package managementstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Connections is the store of a workspace's connections and subscriptions. Every statement
// binds the workspace, so a connection id of another workspace reads as not found.
type Connections struct {
	pool  *pgxpool.Pool
	kinds kinds
	feed  connectionFeed // connectionchanges.go
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
	connectionColumns = `id, workspace_id, kind, provider, state, source_server_url, config, config_version,
		secret_ciphertext IS NOT NULL, api_token_ciphertext IS NOT NULL, created_at, updated_at`
	createConnection = `
		INSERT INTO connection (id, workspace_id, kind, provider, source_server_url, config, secret_ciphertext, source_key,
		                        api_token_ciphertext)
		OVERRIDING SYSTEM VALUE
		VALUES (COALESCE($8::bigint, nextval(pg_get_serial_sequence('connection', 'id'))), $1, $2, $3, $4, $5, $6, NULLIF($7, ''), $9)
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
		INSERT INTO connection_subscription (connection_id, workspace_id, provider, resource_type, resource_id, name,
		                                     access, access_reason, access_checked_at)
		SELECT $1, $2, $3, t, i, n, a, nullif(ar, ''), ac
		FROM unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::timestamptz[]) AS r(t, i, n, a, ar, ac)`
	// bumpConfigVersion tells an admission that waited on the lifecycle lock that the route it
	// read before waiting is stale (it compares the version again under the lock).
	bumpConfigVersion = `
		UPDATE connection SET config_version = config_version + 1, updated_at = now()
		WHERE workspace_id = $1 AND id = $2`
	subscriptionsOf = `
		SELECT resource_type, resource_id, name, access, coalesce(access_reason, ''), access_checked_at
		FROM connection_subscription
		WHERE connection_id = $1 AND workspace_id = $2 ORDER BY resource_type, resource_id`
	sealedSecretOf   = `SELECT secret_ciphertext FROM connection WHERE workspace_id = $1 AND id = $2`
	sealedAPITokenOf = `SELECT api_token_ciphertext FROM connection WHERE workspace_id = $1 AND id = $2`
	// replaceAPIToken stores a new provider API token. Admission never reads it, so
	// config_version does not move: no delivery has to be retried for it.
	replaceAPIToken = `
		UPDATE connection SET api_token_ciphertext = $3, updated_at = now()
		WHERE workspace_id = $1 AND id = $2
		RETURNING ` + connectionColumns
	// replaceSecret stores a new secret; config_version moves with it, so an admission that
	// verified a delivery with the old secret and waited on the lock answers 503.
	replaceSecret = `
		UPDATE connection SET secret_ciphertext = $3, config_version = config_version + 1, updated_at = now()
		WHERE workspace_id = $1 AND id = $2
		RETURNING ` + connectionColumns
	// setCheckedAccess writes the verdicts of a check made with the new secret and marks every
	// subscription the check did not see UNVERIFIED ($7): it was set while the check ran, and
	// was checked (if at all) with the old secret.
	setCheckedAccess = `
		UPDATE connection_subscription s
		SET access = coalesce(v.access, 'UNVERIFIED'),
		    access_reason = CASE WHEN v.access IS NULL THEN $7 ELSE nullif(v.reason, '') END,
		    access_checked_at = CASE WHEN v.access IS NULL THEN NULL ELSE v.checked_at END
		FROM connection_subscription s0
		LEFT JOIN unnest($3::text[], $4::text[], $5::text[], $6::text[], $8::timestamptz[]) AS v(t, i, access, reason, checked_at)
		       ON v.t = s0.resource_type AND v.i = s0.resource_id
		WHERE s.connection_id = $1 AND s.workspace_id = $2
		  AND s0.connection_id = s.connection_id AND s0.resource_type = s.resource_type AND s0.resource_id = s.resource_id`
)

func (s *Connections) scan(row pgx.CollectableRow) (ports.StoredConnection, error) {
	var (
		c              ports.StoredConnection
		kind, provider string
		state          string
	)
	if err := row.Scan(&c.ID, &c.WorkspaceID, &kind, &provider, &state, &c.SourceServerURL, &c.Config,
		&c.ConfigVersion, &c.HasSecret, &c.HasAPIToken, &c.CreatedAt, &c.UpdatedAt); err != nil {
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

// sourceConflict is the answer when a live connection of kind already has the source key (the
// kind's unique index of live connections, connection.KindSpec.AlreadyConnected), or nil when
// err is no such violation.
func sourceConflict(err error, kind connection.Kind) error {
	if !isLiveSourceViolation(err) {
		return nil
	}
	reason := kind.AlreadyConnected()
	if reason == "" {
		reason = "source-already-connected"
	}
	return ports.Reject(ports.ErrConflict, reason, "")
}

// CreateConnection implements ports.ConnectionStore.
func (s *Connections) CreateConnection(ctx context.Context, nc ports.NewConnection) (ports.StoredConnection, error) {
	var (
		id       *int64
		apiToken []byte
	)
	if nc.SealSecret != nil || nc.SealAPIToken != nil {
		var next int64
		if err := s.pool.QueryRow(ctx, nextConnectionID).Scan(&next); err != nil {
			return ports.StoredConnection{}, sqlkit.Interpret("reserve connection id", err)
		}
		id = &next
	}
	if nc.SealSecret != nil {
		sealed, err := nc.SealSecret(*id)
		if err != nil {
			return ports.StoredConnection{}, err
		}
		nc.SecretCiphertext = sealed
	}
	if nc.SealAPIToken != nil {
		sealed, err := nc.SealAPIToken(*id)
		if err != nil {
			return ports.StoredConnection{}, err
		}
		apiToken = sealed
	}
	args := []any{nc.WorkspaceID, nc.Kind.String(), nc.Kind.Provider().String(),
		nc.SourceServerURL, nc.Config, nc.SecretCiphertext, nc.SourceKey, id, apiToken}
	var (
		c   ports.StoredConnection
		err error
	)
	if s.feed.pub != nil {
		c, err = s.createPublishing(ctx, args)
	} else {
		rows, _ := s.pool.Query(ctx, createConnection, args...)
		c, err = pgx.CollectExactlyOneRow(rows, s.scan)
	}
	if conflict := sourceConflict(err, nc.Kind); conflict != nil {
		return ports.StoredConnection{}, conflict
	}
	switch {
	case isForeignKeyViolation(err):
		return ports.StoredConnection{}, fmt.Errorf("create connection: workspace %d: %w", nc.WorkspaceID, ports.ErrNotFound)
	}
	return c, sqlkit.Interpret("create connection", err)
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
	return c, sqlkit.Interpret("connection", err)
}

// lock takes the lifecycle lock of the workspace's connection in tx and reads it.
func (s *Connections) lock(ctx context.Context, tx pgx.Tx, workspaceID, id int64) (ports.StoredConnection, error) {
	rows, _ := tx.Query(ctx, lockConnection, workspaceID, id)
	c, err := pgx.CollectExactlyOneRow(rows, s.scan)
	return c, sqlkit.Interpret("lock connection", err)
}

// Transition implements ports.ConnectionStore. READ COMMITTED: after waiting for the lock,
// PostgreSQL hands the statement the row's latest committed version, which next then judges.
func (s *Connections) Transition(ctx context.Context, workspaceID, id int64,
	next func(current connection.State) (connection.State, error),
) (out ports.StoredConnection, err error) {
	var published bool
	err = sqlkit.WithTx(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(ctx context.Context, tx pgx.Tx) error {
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
		if conflict := sourceConflict(err, c.Kind); conflict != nil {
			return conflict
		}
		if err != nil {
			return sqlkit.Interpret("set connection state", err)
		}
		published = s.feed.pub != nil && out.State != c.State
		if published {
			return s.publishState(ctx, tx, out)
		}
		return nil
	})
	if err != nil {
		return ports.StoredConnection{}, err
	}
	if published {
		s.feed.pub.Committed()
	}
	return out, nil
}

// ReplaceSubscriptions implements ports.ConnectionStore.
func (s *Connections) ReplaceSubscriptions(ctx context.Context, workspaceID, id int64, resources []ports.SubscribedResource) (set []ports.SubscribedResource, err error) {
	n := len(resources)
	types, ids, names := make([]string, n), make([]string, n), make([]string, n)
	access, reasons, checked := make([]string, n), make([]string, n), make([]*time.Time, n)
	for i, r := range resources {
		types[i], ids[i], names[i] = r.Type, r.ID, r.Name
		access[i], reasons[i], checked[i] = connection.Verified.String(), r.AccessReason, r.AccessCheckedAt
		if !r.Access.IsZero() {
			access[i] = r.Access.String()
		}
	}
	err = sqlkit.WithTx(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(ctx context.Context, tx pgx.Tx) error {
		c, err := s.lock(ctx, tx, workspaceID, id)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, deleteSubscriptions, id, workspaceID); err != nil {
			return sqlkit.Interpret("delete subscriptions", err)
		}
		if len(resources) > 0 {
			if _, err := tx.Exec(ctx, insertSubscriptions, id, workspaceID, c.Kind.Provider().String(),
				types, ids, names, access, reasons, checked); err != nil {
				return sqlkit.Interpret("insert subscriptions", err)
			}
		}
		if _, err := tx.Exec(ctx, bumpConfigVersion, workspaceID, id); err != nil {
			return sqlkit.Interpret("bump config version", err)
		}
		set, err = readSubscriptions(ctx, tx, workspaceID, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return set, nil
}

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func readSubscriptions(ctx context.Context, q querier, workspaceID, id int64) ([]ports.SubscribedResource, error) {
	rows, _ := q.Query(ctx, subscriptionsOf, id, workspaceID)
	set, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ports.SubscribedResource, error) {
		var (
			r      ports.SubscribedResource
			access string
		)
		if err := row.Scan(&r.Type, &r.ID, &r.Name, &access, &r.AccessReason, &r.AccessCheckedAt); err != nil {
			return r, err
		}
		var err error
		r.Access, err = connection.ParseAccess(access)
		return r, err
	})
	if err != nil {
		return nil, sqlkit.Interpret("read subscriptions", err)
	}
	if set == nil {
		set = []ports.SubscribedResource{}
	}
	return set, nil
}

// Subscriptions implements ports.ConnectionStore.
func (s *Connections) Subscriptions(ctx context.Context, workspaceID, id int64) ([]ports.SubscribedResource, error) {
	if _, err := s.Connection(ctx, workspaceID, id); err != nil {
		return nil, err
	}
	return readSubscriptions(ctx, s.pool, workspaceID, id)
}

// SealedSecret implements ports.ConnectionStore.
func (s *Connections) SealedSecret(ctx context.Context, workspaceID, id int64) ([]byte, error) {
	var sealed []byte
	err := s.pool.QueryRow(ctx, sealedSecretOf, workspaceID, id).Scan(&sealed)
	if err != nil {
		return nil, sqlkit.Interpret("connection secret", err)
	}
	return sealed, nil
}

// SealedAPIToken implements ports.ConnectionStore.
func (s *Connections) SealedAPIToken(ctx context.Context, workspaceID, id int64) ([]byte, error) {
	var sealed []byte
	err := s.pool.QueryRow(ctx, sealedAPITokenOf, workspaceID, id).Scan(&sealed)
	if err != nil {
		return nil, sqlkit.Interpret("connection api token", err)
	}
	return sealed, nil
}

// setAccess writes the verdicts of a check made with a new credential in tx (under the
// connection's lifecycle lock); every subscription the check did not see becomes UNVERIFIED
// with reason unchecked.
func setAccess(ctx context.Context, tx pgx.Tx, workspaceID, id int64, access []ports.SubscribedResource, unchecked string) error {
	n := len(access)
	types, ids, states, reasons, checked := make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]*time.Time, n)
	for i, r := range access {
		types[i], ids[i], states[i], reasons[i], checked[i] = r.Type, r.ID, r.Access.String(), r.AccessReason, r.AccessCheckedAt
	}
	if _, err := tx.Exec(ctx, setCheckedAccess, id, workspaceID, types, ids, states, reasons, unchecked, checked); err != nil {
		return sqlkit.Interpret("set checked access", err)
	}
	return nil
}

// ReplaceSecret implements ports.ConnectionStore.
func (s *Connections) ReplaceSecret(ctx context.Context, workspaceID, id int64, sealed []byte,
	access []ports.SubscribedResource, unchecked string,
) (out ports.StoredConnection, err error) {
	err = sqlkit.WithTx(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := s.lock(ctx, tx, workspaceID, id); err != nil {
			return err
		}
		if access != nil {
			if err := setAccess(ctx, tx, workspaceID, id, access, unchecked); err != nil {
				return err
			}
		}
		rows, _ := tx.Query(ctx, replaceSecret, workspaceID, id, sealed)
		out, err = pgx.CollectExactlyOneRow(rows, s.scan)
		return sqlkit.Interpret("replace secret", err)
	})
	if err != nil {
		return ports.StoredConnection{}, err
	}
	return out, nil
}

// ReplaceAPIToken implements ports.ConnectionStore: the row's lifecycle lock (FOR UPDATE, the
// lock every connection change takes), so the token changes between whole transitions. With
// verdicts (access not nil) the subscriptions' access changes with it, and config_version moves
// (the routes changed).
func (s *Connections) ReplaceAPIToken(ctx context.Context, workspaceID, id int64, sealed []byte,
	access []ports.SubscribedResource, unchecked string,
) (out ports.StoredConnection, err error) {
	err = sqlkit.WithTx(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := s.lock(ctx, tx, workspaceID, id); err != nil {
			return err
		}
		if access != nil {
			if err := setAccess(ctx, tx, workspaceID, id, access, unchecked); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, bumpConfigVersion, workspaceID, id); err != nil {
				return sqlkit.Interpret("bump config version", err)
			}
		}
		rows, _ := tx.Query(ctx, replaceAPIToken, workspaceID, id, sealed)
		out, err = pgx.CollectExactlyOneRow(rows, s.scan)
		return sqlkit.Interpret("replace api token", err)
	})
	if err != nil {
		return ports.StoredConnection{}, err
	}
	return out, nil
}
