package managementstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// SourceDirectory finds a per-connection provider's connection for webhook verification, with
// its secret opened. It is the only reader that opens a secret.
type SourceDirectory struct {
	pool    *pgxpool.Pool
	secrets ports.SecretBox
	kinds   kinds
}

var _ ports.ConnectionDirectory = (*SourceDirectory)(nil)

// NewSourceDirectory builds the directory.
func NewSourceDirectory(pool *pgxpool.Pool, secrets ports.SecretBox, cfg Config) (*SourceDirectory, error) {
	if pool == nil || secrets == nil {
		return nil, errors.New("postgres management: the source directory needs a pool and a secret box")
	}
	idx, err := cfg.index()
	if err != nil {
		return nil, err
	}
	return &SourceDirectory{pool: pool, secrets: secrets, kinds: idx}, nil
}

// sourceConnection reads without a lock: verification only needs the secret and the route;
// admission takes the lifecycle lock later and reads the state again under it.
const sourceConnection = `
	SELECT id, workspace_id, kind, provider, state, source_server_url, config, secret_ciphertext, config_version
	FROM connection WHERE id = $1`

// SourceConnection implements ports.ConnectionDirectory.
func (d *SourceDirectory) SourceConnection(ctx context.Context, id int64) (*ports.SourceConnection, error) {
	var (
		c                     ports.SourceConnection
		kind, provider, state string
		sealed                []byte
	)
	err := d.pool.QueryRow(ctx, sourceConnection, id).Scan(&c.ID, &c.WorkspaceID, &kind, &provider, &state,
		&c.SourceServerURL, &c.Config, &sealed, &c.ConfigVersion)
	if err != nil {
		return nil, sqlkit.Interpret(fmt.Sprintf("source connection %d", id), err)
	}
	if c.Kind, err = d.kinds.restore(kind, provider); err != nil {
		return nil, err
	}
	if c.State, err = connection.ParseState(state); err != nil {
		return nil, fmt.Errorf("restore connection %d: %w", id, err)
	}
	if c.Config == nil {
		c.Config = map[string]any{}
	}
	if sealed != nil {
		// A failure here means the credentials key changed or the row was tampered with: an
		// operator's problem, reported as such and never as "not found".
		if c.Secret, err = d.secrets.Open(c.ID, sealed); err != nil {
			return nil, fmt.Errorf("open secret of connection %d: %w", id, err)
		}
	}
	return &c, nil
}
