package gitlabapi

import (
	"context"
	"fmt"
	"strconv"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmodel"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports/credential"
)

// CredentialStore is what Credentials reads of a workspace's connections (the PostgreSQL
// management adapter's LiveSecrets, the only producer of a credential.Credential). Every
// lookup binds the workspace.
type CredentialStore interface {
	// APICredential: the API token of the workspace's live connection connectionID.
	APICredential(ctx context.Context, workspaceID, connectionID int64) (credential.Credential, string, bool, error)
	// VerifiedSubscriberAPIToken: the API token of the workspace's live connection of kind
	// with a VERIFIED subscription of one of resources.
	VerifiedSubscriberAPIToken(ctx context.Context, workspaceID int64, kind connection.Kind, resources [][2]string) (credential.Credential, bool, error)
}

// ErrNoCredential: the workspace's connection has no API token (a sync job's), or the workspace
// has no live GitLab connection with an API token whose subscription of the project or its
// group is VERIFIED (a handler's read). Nothing is read, with no other token: a handler then
// has nothing to read (it wraps gitlabmodel.ErrProviderNotFound), a backfill is refused.
var ErrNoCredential = &inbox.ProviderError{Provider: "gitlab", Op: "credential", Kind: inbox.ProviderRefused,
	Err: fmt.Errorf("the workspace's connection has no GitLab API token for this read: %w", gitlabmodel.ErrProviderNotFound)}

// Credentials picks the credential of a read (Config.Token): the job's connection's API token
// for a sync job (Access.ConnectionID), else the API token of the workspace's live GITLAB
// connection that verified its subscription of the project or of one of its groups. There is
// no instance-wide token (HEPHAESTUS_GITLAB_API_TOKEN is no longer read).
type Credentials struct {
	Store CredentialStore
}

// Token implements Config.Token.
func (c *Credentials) Token(ctx context.Context, acc gitlabmodel.Access) (credential.Credential, error) {
	if acc.ConnectionID > 0 {
		cred, _, found, err := c.Store.APICredential(ctx, acc.WorkspaceID, acc.ConnectionID)
		if err != nil {
			return credential.Credential{}, err
		}
		if !found || cred.Secret() == "" {
			return credential.Credential{}, ErrNoCredential
		}
		return cred, nil
	}
	var resources [][2]string
	if acc.ProjectID > 0 {
		resources = append(resources, [2]string{gitlab.ResourceProject, strconv.FormatInt(acc.ProjectID, 10)})
	}
	for _, g := range acc.GroupIDs {
		resources = append(resources, [2]string{gitlab.ResourceGroup, strconv.FormatInt(g, 10)})
	}
	if len(resources) == 0 {
		return credential.Credential{}, ErrNoCredential
	}
	cred, found, err := c.Store.VerifiedSubscriberAPIToken(ctx, acc.WorkspaceID, gitlab.Kind, resources)
	if err != nil {
		return credential.Credential{}, err
	}
	if !found || cred.Secret() == "" {
		return credential.Credential{}, ErrNoCredential
	}
	return cred, nil
}
