package githubapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
	"github.com/hephaestus-dev/hephaestus/ports/credential"
)

var (
	_ contract.ResourceAccessChecker = (*AppResourceAccess)(nil)
	_ contract.OwnCredential         = (*AppResourceAccess)(nil)
)

// Causes of a refused App subscription check.
const (
	CauseOrganizationNotFound     = "organization-not-found"     // 404 for the id with the installation token
	CauseOrganizationNotInstalled = "organization-not-installed" // the connection's installation is on another account
	CauseAppNotConfigured         = "app-authentication-not-configured"
	CauseConnectionNotLive        = "connection-not-live"
)

// InstallationCredentials is the lookup an App check reads its connection's installation token
// through (the connection store's LiveSecrets): bound to workspace and connection.
type InstallationCredentials interface {
	ConnectionInstallationCredential(ctx context.Context, workspaceID, connectionID int64, kind connection.Kind,
		mint func(ctx context.Context, installationID int64) (string, error)) (credential.Credential, bool, error)
}

// AppResourceAccess checks a GITHUB_APP connection's subscriptions with the installation token
// of the connection's own installation (never another's, never an instance-wide token):
//   - a repository: GET /repositories/{id} with the installation token;
//   - an organization: GET /organizations/{id} with the installation token, and the
//     connection's installation must be installed on that organization (GET
//     /app/installations/{installation} with the App JWT names its account), since any token
//     reads a public organization.
//
// The name is the one GitHub gives for the id (full_name, login). Without App authentication
// nothing can be verified (contract.ErrUnverifiable). A token GitHub answers 401 is dropped from
// the cache and the check is made once more with a newly minted one.
type AppResourceAccess struct {
	app   *App // nil: no App authentication configured
	store InstallationCredentials
	base  *url.URL
	http  *http.Client
	agent string
}

// NewAppResourceAccess builds the checker; app may be nil (every check then refuses as
// unverifiable).
func NewAppResourceAccess(cfg AccessConfig, app *App, store InstallationCredentials) (*AppResourceAccess, error) {
	if store == nil {
		return nil, errors.New("github app access: a credential store is required")
	}
	a, err := NewRepositoryAccess(cfg)
	if err != nil {
		return nil, err
	}
	return &AppResourceAccess{app: app, store: store, base: a.base, http: a.http, agent: a.userAgent}, nil
}

// Kind implements contract.ResourceAccessChecker: App connections.
func (a *AppResourceAccess) Kind() connection.Kind { return github.KindApp }

// ResourceTypes implements contract.ResourceAccessChecker.
func (a *AppResourceAccess) ResourceTypes() []string {
	return []string{github.ResourceOrganization, github.ResourceRepository}
}

// OwnCredential implements contract.OwnCredential: the token is minted for the connection's own
// installation, not read from a stored secret.
func (a *AppResourceAccess) OwnCredential() {}

// CheckAccess implements contract.ResourceAccessChecker.
func (a *AppResourceAccess) CheckAccess(ctx context.Context, target contract.AccessTarget, r ports.Resource) (contract.ResourceInfo, error) {
	var none contract.ResourceInfo
	id, err := strconv.ParseInt(r.ID, 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != r.ID {
		return none, fmt.Errorf("github app access: %s %q is not a positive integer id: %w", r.Type, r.ID, ports.ErrMalformed)
	}
	prefix, notFound := "/repositories/", CauseRepositoryNotFound
	switch r.Type {
	case github.ResourceRepository:
	case github.ResourceOrganization:
		prefix, notFound = "/organizations/", CauseOrganizationNotFound
	default:
		return none, fmt.Errorf("github app access: unknown resource type %q: %w", r.Type, ports.ErrMalformed)
	}
	if a.app == nil {
		return none, fmt.Errorf("%w: %w", contract.ErrUnverifiable, refused(CauseAppNotConfigured))
	}
	var info contract.ResourceInfo
	for attempt := 0; attempt < 2; attempt++ {
		cred, found, err := a.store.ConnectionInstallationCredential(ctx, target.WorkspaceID, target.ConnectionID, github.KindApp, a.app.InstallationToken)
		if err != nil {
			return none, inbox.Transient("github app access: installation token", err)
		}
		if !found {
			return none, refused(CauseConnectionNotLive)
		}
		info, err = checkByID(ctx, a.http, a.base, a.agent, cred.Secret(), prefix, id, notFound)
		var rej *ports.RejectedError
		if attempt == 0 && errors.As(err, &rej) && rej.Detail == CauseTokenRejected {
			a.app.Forget(cred.InstallationID()) // revoked early: mint once more
			continue
		}
		if err != nil {
			return none, err
		}
		if r.Type == github.ResourceOrganization {
			if err := a.installedOn(ctx, cred.InstallationID(), id); err != nil {
				return none, err
			}
		}
		break
	}
	return info, nil
}

// installedOn checks that installation is installed on the account with id accountID.
func (a *AppResourceAccess) installedOn(ctx context.Context, installation, accountID int64) error {
	var answer struct {
		ID      int64 `json:"id"`
		Account *struct {
			ID int64 `json:"id"`
		} `json:"account"`
	}
	path := "/app/installations/" + strconv.FormatInt(installation, 10)
	if err := a.app.call(ctx, http.MethodGet, path, &answer); err != nil {
		// No verdict (an *inbox.ProviderError, never the JWT): the subscriber hears 503 retry.
		return err
	}
	if answer.ID != installation || answer.Account == nil {
		return inbox.Transient("github app access GET "+path, errors.New("installation answer without its account"))
	}
	if answer.Account.ID != accountID {
		return refused(CauseOrganizationNotInstalled)
	}
	return nil
}
