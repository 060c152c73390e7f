package githubapi

import (
	"context"
	"errors"
	"strconv"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubhandlers"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
)

// CredentialStore is what Credentials reads of a workspace's connections (the PostgreSQL
// management adapter's LiveSecrets). Every lookup binds the workspace.
type CredentialStore interface {
	// HasLiveConnection: the workspace has a live connection of kind with routing key key.
	HasLiveConnection(ctx context.Context, workspaceID int64, kind connection.Kind, key string) (bool, error)
	// VerifiedSubscriberSecret: the opened secret of the workspace's live connection of kind
	// with a VERIFIED subscription of the resource (found false: none).
	VerifiedSubscriberSecret(ctx context.Context, workspaceID int64, kind connection.Kind, resourceType, resourceID string) ([]byte, bool, error)
}

// ErrNoCredential: App authentication is configured and the workspace has neither the
// delivery's installation nor a PAT verified for the repository, so no read is made with
// someone else's credential.
var ErrNoCredential = errors.New("github api: the workspace has no credential for this read")

// Credentials picks the token of a read (Config.Token), in this order:
//  1. with App authentication configured, the installation token of the delivery's signed
//     installation, when the row's workspace has a live App connection of it;
//  2. the PAT of the workspace's live GITHUB_PAT connection whose subscription of the
//     repository is VERIFIED (PAT workspaces receive through another workspace's
//     installation and read with their own token);
//  3. without App authentication only, Static (HEPHAESTUS_GITHUB_API_TOKEN; "" reads
//     unauthenticated), the fallback of a deployment that has no App key.
//
// Otherwise ErrNoCredential.
type Credentials struct {
	App    *App
	Store  CredentialStore
	Static string
}

// Token implements Config.Token.
func (c *Credentials) Token(ctx context.Context, acc githubhandlers.Access) (string, error) {
	if c.App != nil && acc.InstallationID > 0 {
		ok, err := c.Store.HasLiveConnection(ctx, acc.WorkspaceID, github.KindApp, strconv.FormatInt(acc.InstallationID, 10))
		if err != nil {
			return "", err
		}
		if ok {
			return c.App.InstallationToken(ctx, acc.InstallationID)
		}
	}
	if acc.RepositoryID > 0 {
		pat, found, err := c.Store.VerifiedSubscriberSecret(ctx, acc.WorkspaceID, github.KindPAT,
			github.ResourceRepository, strconv.FormatInt(acc.RepositoryID, 10))
		if err != nil {
			return "", err
		}
		if found && len(pat) > 0 {
			return string(pat), nil
		}
	}
	if c.App == nil {
		return c.Static, nil
	}
	return "", ErrNoCredential
}
