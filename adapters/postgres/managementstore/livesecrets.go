package managementstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
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
		return nil, false, sqlkit.Interpret("live connection secret", err)
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

// liveConnectionExists: the workspace has a live connection of kind with the routing key.
const liveConnectionExists = `
	SELECT EXISTS (SELECT 1 FROM connection
		WHERE workspace_id = $1 AND kind = $2 AND source_key = $3 AND state <> 'UNINSTALLED')`

// HasLiveConnection reports whether workspaceID has a live connection of kind whose routing
// key is sourceKey (a GitHub App connection of an installation). Errors: database errors.
func (s *LiveSecrets) HasLiveConnection(ctx context.Context, workspaceID int64, kind connection.Kind, sourceKey string) (bool, error) {
	var ok bool
	if err := s.pool.QueryRow(ctx, liveConnectionExists, workspaceID, kind.String(), sourceKey).Scan(&ok); err != nil {
		return false, sqlkit.Interpret("live connection", err)
	}
	return ok, nil
}

// verifiedSubscriberSecret is the secret of the workspace's live connection of kind whose
// subscription of the resource is VERIFIED: the token that was checked to read it (a PAT).
// Newest connection first.
const verifiedSubscriberSecret = `
	SELECT c.id, c.secret_ciphertext FROM connection c
	JOIN connection_subscription s ON s.connection_id = c.id AND s.workspace_id = c.workspace_id
	WHERE c.workspace_id = $1 AND c.kind = $2 AND c.state <> 'UNINSTALLED' AND c.secret_ciphertext IS NOT NULL
	  AND s.resource_type = $3 AND s.resource_id = $4 AND s.access = 'VERIFIED'
	ORDER BY c.id DESC LIMIT 1`

// VerifiedSubscriberSecret returns the opened secret of workspaceID's live connection of kind
// that has a VERIFIED subscription of (resourceType, resourceID); found is false when none.
// Errors as for LiveSecret.
func (s *LiveSecrets) VerifiedSubscriberSecret(ctx context.Context, workspaceID int64, kind connection.Kind,
	resourceType, resourceID string,
) (secret []byte, found bool, err error) {
	var (
		id     int64
		sealed []byte
	)
	err = s.pool.QueryRow(ctx, verifiedSubscriberSecret, workspaceID, kind.String(), resourceType, resourceID).Scan(&id, &sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, sqlkit.Interpret("verified subscriber secret", err)
	}
	opened, err := s.secrets.Open(id, sealed)
	if err != nil {
		return nil, false, fmt.Errorf("open secret of connection %d: %w", id, err)
	}
	return opened, true, nil
}

// connectionAPIToken binds the workspace and the connection a sync job names; an UNINSTALLED
// connection's token is never handed out.
const connectionAPIToken = `
	SELECT source_server_url, api_token_ciphertext FROM connection
	WHERE workspace_id = $1 AND id = $2 AND state <> 'UNINSTALLED'`

// APIToken returns the opened provider API token of workspaceID's live connection
// connectionID and the connection's source server URL (where the token belongs). found is
// false when there is no such live connection or it holds no token. Errors as for LiveSecret.
func (s *LiveSecrets) APIToken(ctx context.Context, workspaceID, connectionID int64) (token []byte, sourceServerURL string, found bool, err error) {
	var sealed []byte
	err = s.pool.QueryRow(ctx, connectionAPIToken, workspaceID, connectionID).Scan(&sourceServerURL, &sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, "", false, nil
	}
	if err != nil {
		return nil, "", false, sqlkit.Interpret("connection api token", err)
	}
	if sealed == nil {
		return nil, sourceServerURL, false, nil
	}
	opened, err := s.secrets.Open(connectionID, sealed)
	if err != nil {
		return nil, "", false, fmt.Errorf("open api token of connection %d: %w", connectionID, err)
	}
	return opened, sourceServerURL, true, nil
}
