package managementstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports/credential"
)

// issuer is the process's one credential issuer (credential.ClaimIssuer), claimed while this
// package is initialised: every credential comes from a lookup below, each of which binds the
// workspace and the connection, and any other claimant panics at start. The architecture spec
// "Provider credentials" fails on any other mention of the issuer.
var issuer = credential.ClaimIssuer()

// liveConnectionOfKey is the workspace's live connection of kind with the routing key (an App
// connection of an installation), newest first.
const liveConnectionOfKey = `
	SELECT id FROM connection
	WHERE workspace_id = $1 AND kind = $2 AND source_key = $3 AND state <> 'UNINSTALLED'
	ORDER BY id DESC LIMIT 1`

// InstallationCredential is the installation token of installationID, for workspaceID only
// when that workspace has a live connection of kind (GITHUB_APP) whose routing key is the
// installation: mint (the App's token cache) is asked only then. found is false otherwise.
// Errors: a database error; mint's error.
func (s *LiveSecrets) InstallationCredential(ctx context.Context, workspaceID int64, kind connection.Kind, installationID int64,
	mint func(ctx context.Context, installationID int64) (string, error),
) (cred credential.Credential, found bool, err error) {
	if installationID <= 0 {
		return credential.Credential{}, false, nil
	}
	var id int64
	err = s.pool.QueryRow(ctx, liveConnectionOfKey, workspaceID, kind.String(), strconv.FormatInt(installationID, 10)).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return credential.Credential{}, false, nil
	}
	if err != nil {
		return credential.Credential{}, false, sqlkit.Interpret("live installation connection", err)
	}
	token, err := mint(ctx, installationID)
	if err != nil {
		return credential.Credential{}, false, err
	}
	return issuer.IssueInstallation(workspaceID, id, installationID, token), true, nil
}

// connectionInstallation is the installation (routing key) of the workspace's live connection.
const connectionInstallation = `
	SELECT source_key FROM connection
	WHERE workspace_id = $1 AND id = $2 AND kind = $3 AND state <> 'UNINSTALLED' AND source_key IS NOT NULL`

// ConnectionInstallationCredential is the installation token of workspaceID's live connection
// connectionID of kind (GITHUB_APP), minted for the installation the connection is bound to
// (its routing key): a subscription check or a backfill that names the connection reads with
// its own installation. found is false when there is no such live connection.
func (s *LiveSecrets) ConnectionInstallationCredential(ctx context.Context, workspaceID, connectionID int64, kind connection.Kind,
	mint func(ctx context.Context, installationID int64) (string, error),
) (cred credential.Credential, found bool, err error) {
	var key string
	err = s.pool.QueryRow(ctx, connectionInstallation, workspaceID, connectionID, kind.String()).Scan(&key)
	if errors.Is(err, pgx.ErrNoRows) {
		return credential.Credential{}, false, nil
	}
	if err != nil {
		return credential.Credential{}, false, sqlkit.Interpret("connection installation", err)
	}
	installation, err := strconv.ParseInt(key, 10, 64)
	if err != nil || installation <= 0 {
		return credential.Credential{}, false, nil
	}
	token, err := mint(ctx, installation)
	if err != nil {
		return credential.Credential{}, false, err
	}
	return issuer.IssueInstallation(workspaceID, connectionID, installation, token), true, nil
}

// VerifiedSubscriberCredential is the secret of workspaceID's live connection of kind whose
// subscription of the resource is VERIFIED (a PAT), as a Credential. found false: none.
func (s *LiveSecrets) VerifiedSubscriberCredential(ctx context.Context, workspaceID int64, kind connection.Kind,
	resourceType, resourceID string,
) (credential.Credential, bool, error) {
	var (
		id     int64
		sealed []byte
	)
	err := s.pool.QueryRow(ctx, verifiedSubscriberSecret, workspaceID, kind.String(), resourceType, resourceID).Scan(&id, &sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return credential.Credential{}, false, nil
	}
	if err != nil {
		return credential.Credential{}, false, sqlkit.Interpret("verified subscriber secret", err)
	}
	opened, err := s.secrets.Open(id, sealed)
	if err != nil {
		return credential.Credential{}, false, fmt.Errorf("open secret of connection %d: %w", id, err)
	}
	defer clear(opened)
	return issuer.Issue(workspaceID, id, opened), true, nil
}

// verifiedSubscriberAPIToken is the API token of the workspace's live connection of kind
// whose subscription of one of the resources is VERIFIED (a GitLab project, or its group):
// the token that was checked to read it. Newest connection first.
const verifiedSubscriberAPIToken = `
	SELECT c.id, c.api_token_ciphertext FROM connection c
	JOIN connection_subscription s ON s.connection_id = c.id AND s.workspace_id = c.workspace_id
	WHERE c.workspace_id = $1 AND c.kind = $2 AND c.state <> 'UNINSTALLED' AND c.api_token_ciphertext IS NOT NULL
	  AND s.access = 'VERIFIED' AND (s.resource_type, s.resource_id) IN (SELECT * FROM unnest($3::text[], $4::text[]))
	ORDER BY c.id DESC LIMIT 1`

// VerifiedSubscriberAPIToken is the provider API token of workspaceID's live connection of
// kind that has a VERIFIED subscription of one of resources (a handler's read of a GitLab
// project the workspace subscribed to directly or through a group). found false: none.
func (s *LiveSecrets) VerifiedSubscriberAPIToken(ctx context.Context, workspaceID int64, kind connection.Kind,
	resources [][2]string,
) (credential.Credential, bool, error) {
	types, ids := make([]string, len(resources)), make([]string, len(resources))
	for i, r := range resources {
		types[i], ids[i] = r[0], r[1]
	}
	var (
		id     int64
		sealed []byte
	)
	err := s.pool.QueryRow(ctx, verifiedSubscriberAPIToken, workspaceID, kind.String(), types, ids).Scan(&id, &sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return credential.Credential{}, false, nil
	}
	if err != nil {
		return credential.Credential{}, false, sqlkit.Interpret("verified subscriber api token", err)
	}
	opened, err := s.secrets.Open(id, sealed)
	if err != nil {
		return credential.Credential{}, false, fmt.Errorf("open api token of connection %d: %w", id, err)
	}
	defer clear(opened)
	return issuer.Issue(workspaceID, id, opened), true, nil
}

// APICredential is the provider API token of workspaceID's live connection connectionID (a
// sync job's connection), with the connection's source server URL. found false: no such live
// connection, or it holds no token.
func (s *LiveSecrets) APICredential(ctx context.Context, workspaceID, connectionID int64) (cred credential.Credential, sourceServerURL string, found bool, err error) {
	token, src, found, err := s.APIToken(ctx, workspaceID, connectionID)
	if err != nil || !found {
		return credential.Credential{}, src, found, err
	}
	defer clear(token)
	return issuer.Issue(workspaceID, connectionID, token), src, true, nil
}
