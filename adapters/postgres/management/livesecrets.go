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

// LiveSecrets opens the secret of a workspace's live connection named by its routing key: the
// credential a provider client uses for that workspace's calls (a Slack team's bot token from
// the install flow). It reads on the main pool, from handlers, never for unauthenticated
// requests.
type LiveSecrets struct {
	pool    *pgxpool.Pool
	secrets ports.SecretBox
}

// NewLiveSecrets builds the reader.
func NewLiveSecrets(pool *pgxpool.Pool, secrets ports.SecretBox) (*LiveSecrets, error) {
	if pool == nil || secrets == nil {
		return nil, errors.New("postgres management: live secrets need a pool and a secret box")
	}
	return &LiveSecrets{pool: pool, secrets: secrets}, nil
}

// liveSecretOf binds the workspace: a routing key is unique among live connections of its
// kind (uq_connection_installation, uq_connection_slack_team), and a handler of one workspace
// must never get another workspace's credential even if that were not so. Newest first, so a
// reconnect's connection wins over an older one that is still live.
const liveSecretOf = `
	SELECT id, secret_ciphertext FROM connection
	WHERE workspace_id = $1 AND kind = $2 AND source_key = $3 AND state <> 'UNINSTALLED'
	ORDER BY id DESC LIMIT 1`

// LiveSecret returns the opened secret of workspaceID's live (not UNINSTALLED) connection of
// kind whose routing key is sourceKey. found is false when there is no such connection or it
// has no secret. Errors: a database error (interpreted), or a secret that does not open.
func (s *LiveSecrets) LiveSecret(ctx context.Context, workspaceID int64, kind connection.Kind, sourceKey string) (secret []byte, found bool, err error) {
	var (
		id     int64
		sealed []byte
	)
	err = s.pool.QueryRow(ctx, liveSecretOf, workspaceID, kind.String(), sourceKey).Scan(&id, &sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, pgutil.Interpret("live connection secret", err)
	}
	if sealed == nil {
		return nil, false, nil
	}
	opened, err := s.secrets.Open(id, sealed)
	if err != nil {
		return nil, false, fmt.Errorf("open secret of connection %d: %w", id, err)
	}
	return opened, true, nil
}
