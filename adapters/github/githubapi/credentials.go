package githubapi

import (
	"context"
	"fmt"
	"strconv"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmodel"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports/credential"
)

// CredentialStore is what Credentials reads of a workspace's connections (the PostgreSQL
// management adapter's LiveSecrets, the only producer of a credential.Credential). Every
// lookup binds the workspace.
type CredentialStore interface {
	// InstallationCredential: the installation token of installationID (minted by mint) when
	// the workspace has a live connection of kind bound to it.
	InstallationCredential(ctx context.Context, workspaceID int64, kind connection.Kind, installationID int64,
		mint func(ctx context.Context, installationID int64) (string, error)) (credential.Credential, bool, error)
	// VerifiedSubscriberCredential: the secret of the workspace's live connection of kind
	// with a VERIFIED subscription of the resource (found false: none).
	VerifiedSubscriberCredential(ctx context.Context, workspaceID int64, kind connection.Kind, resourceType, resourceID string) (credential.Credential, bool, error)
}

// ErrNoCredential: the workspace has neither the delivery's installation (with App
// authentication configured) nor a PAT verified for the repository, so no read is made, and
// certainly none with someone else's credential or an instance-wide token. It wraps
// githubmodel.ErrProviderNotFound: a handler then has nothing to read and mirrors what the
// payload carries.
var ErrNoCredential = fmt.Errorf("github api: the workspace has no credential for this read: %w", githubmodel.ErrProviderNotFound)

// Credentials picks the credential of a read (Config.Token), in this order:
//  1. with App authentication configured, the installation token of the delivery's signed
//     installation, when the row's workspace has a live App connection of it;
//  2. the PAT of the workspace's live GITHUB_PAT connection whose subscription of the
//     repository is VERIFIED (PAT workspaces receive through another workspace's
//     installation and read with their own token).
//
// Otherwise ErrNoCredential. There is no instance-wide fallback: HEPHAESTUS_GITHUB_API_TOKEN
// is no longer read (a workspace-chosen resource read with it could be another tenant's).
type Credentials struct {
	App   *App
	Store CredentialStore
}

// Token implements Config.Token.
func (c *Credentials) Token(ctx context.Context, acc githubmodel.Access) (credential.Credential, error) {
	if c.App != nil && acc.InstallationID > 0 {
		cred, ok, err := c.Store.InstallationCredential(ctx, acc.WorkspaceID, github.KindApp, acc.InstallationID, c.App.InstallationToken)
		if err != nil {
			return credential.Credential{}, err
		}
		if ok {
			return cred, nil
		}
	}
	if acc.RepositoryID > 0 {
		cred, found, err := c.Store.VerifiedSubscriberCredential(ctx, acc.WorkspaceID, github.KindPAT,
			github.ResourceRepository, strconv.FormatInt(acc.RepositoryID, 10))
		if err != nil {
			return credential.Credential{}, err
		}
		if found && cred.Secret() != "" {
			return cred, nil
		}
	}
	return credential.Credential{}, ErrNoCredential
}

// Rejected implements Config.Rejected: GitHub answered 401 to cred, so a cached installation
// token is dropped and the next Token mints a new one.
func (c *Credentials) Rejected(cred credential.Credential) {
	if c.App != nil && cred.InstallationID() > 0 {
		c.App.Forget(cred.InstallationID())
	}
}
