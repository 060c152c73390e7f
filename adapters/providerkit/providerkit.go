// Package providerkit is what bootstrap hands a provider module and what a module hands back
// besides its contract.Provider description: the shared dependencies a provider's adapters are
// built from (Deps), its mirror store wired to the change feed and the connection store
// (NewMirror), the HTTP routes of its read API (Routes), and how a module is made
// from its own environment variables (Env, Loader, config.go). What a provider needs of the
// engine's stores it gets as ports (Secrets, ConnectionStates): the kit imports no package of
// adapters/postgres, so a provider module cannot reach the stores through it (the
// architecture spec "Layer boundaries" holds that). It names no provider; each provider's
// <provider>module package builds its parts from it, and adapters/providers lists the
// modules, one line per provider.
package providerkit

import (
	"context"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
	"github.com/hephaestus-dev/hephaestus/ports/credential"
)

// Module is one provider as bootstrap lists it: its static description (connection kinds,
// config validation, resource types, and its refusal reasons when it implements
// contract.RejectionReasoner), known before the database is up, and Build, which makes the rest
// once it is.
type Module interface {
	contract.ProviderModule
	// Build makes the provider's webhook, handlers, mirror store, read API and optional parts
	// from deps. Errors: a configuration the provider cannot run with.
	Build(deps Deps) (contract.Provider, error)
}

// Deps are the shared dependencies of every provider's adapters.
type Deps struct {
	// Owner is this server's id (singleton leases of a provider's loops).
	Owner string
	// Pool is the service's database pool (the provider's mirror store).
	Pool *pgxpool.Pool
	// Inbox is the step runner every handler writes through.
	Inbox ports.DeliveryInbox
	// Changes publishes mirror writes to the change feed.
	Changes ports.ChangePublisher
	// Connections publishes connection state changes made by a provider's lifecycle handlers.
	Connections ConnectionStates
	// Secrets reads a workspace's live provider credentials (bot tokens, verified PATs).
	Secrets Secrets
	// Lease is the singleton lease a provider's periodic loop runs under (one server at a time).
	Lease ports.SingletonLease
	// Counter is the increment of a counter the module declared (contract.CounterDeclarer).
	Counter func(name string) (func(), error)
	// Log receives the provider's log lines; never a secret.
	Log ports.Logger
}

// ConnectionStates is what a provider's lifecycle handlers (an uninstall, a suspension) need of
// the connection store: publishing the change of a connection's state in the transaction that
// made it. The connection store (adapters/postgres/managementstore.Connections) implements it.
type ConnectionStates interface {
	// PublishConnectionState publishes connection.state_changed for the workspace's connection,
	// in tx. Errors: a database error.
	PublishConnectionState(ctx context.Context, tx ports.Tx, workspaceID, connectionID int64) error
}

// Secrets is what a provider reads of the credentials of a workspace's own live connections:
// every lookup binds the workspace (and the connection, where it names one), and all but
// LiveSecret answer a sealed credential.Credential, which only the connection store
// (adapters/postgres/managementstore.LiveSecrets) issues. found is false when the workspace has
// no such live connection or it holds no secret; errors are database errors, a secret that does
// not open, or mint's error. Each provider client narrows this to the lookups it makes.
type Secrets interface {
	// LiveSecret is the opened secret of the live connection of kind whose routing key is
	// sourceKey (a Slack team's bot token).
	LiveSecret(ctx context.Context, workspaceID int64, kind connection.Kind, sourceKey string) (secret []byte, found bool, err error)
	// InstallationCredential is the installation token of installationID, minted by mint only
	// when the workspace has a live connection of kind bound to that installation.
	InstallationCredential(ctx context.Context, workspaceID int64, kind connection.Kind, installationID int64,
		mint func(ctx context.Context, installationID int64) (string, error)) (credential.Credential, bool, error)
	// ConnectionInstallationCredential is the installation token of the installation that the
	// live connection connectionID of kind is bound to.
	ConnectionInstallationCredential(ctx context.Context, workspaceID, connectionID int64, kind connection.Kind,
		mint func(ctx context.Context, installationID int64) (string, error)) (credential.Credential, bool, error)
	// VerifiedSubscriberCredential is the secret of the live connection of kind whose
	// subscription of the resource is VERIFIED (a PAT).
	VerifiedSubscriberCredential(ctx context.Context, workspaceID int64, kind connection.Kind, resourceType, resourceID string) (credential.Credential, bool, error)
	// VerifiedSubscriberAPIToken is the API token of the live connection of kind with a
	// VERIFIED subscription of one of resources (type, id pairs).
	VerifiedSubscriberAPIToken(ctx context.Context, workspaceID int64, kind connection.Kind, resources [][2]string) (credential.Credential, bool, error)
	// APICredential is the API token of the live connection connectionID, with the
	// connection's source server URL.
	APICredential(ctx context.Context, workspaceID, connectionID int64) (cred credential.Credential, sourceServerURL string, found bool, err error)
}

// Guard is what a read API checks its callers with (managementapi.RequireAuth and
// RequireMember) and where it logs the cause of a 500 answer. It is handed over when the routes
// are mounted, after the management service exists (which itself needs the providers' access
// checkers).
type Guard struct {
	Auth    managementapi.Authenticator
	Members managementapi.Members
	Log     ports.Logger
}

// Routes is implemented by a built provider with HTTP routes (its read API).
type Routes interface {
	Mount(r gin.IRouter, g Guard) error
}

// Built is a built provider: set the fields, or embed it in a module's built value that adds
// the optional interfaces Built does not have. A provider without sync sources, access checkers
// or install flows leaves that list empty.
type Built struct {
	contract.ProviderModule
	Hook     contract.Webhook
	Register func(reg contract.HandlerRegistrar) error
	Fields   contract.PersonFields
	Mirror   contract.PersonDataStore
	// ReadAPI mounts the read API (readkit.ReadAPI); nil: the provider has none.
	ReadAPI func(r gin.IRouter, g Guard) error
	// Sync are the backfill sources (contract.Syncing).
	Sync []contract.SyncSource
	// Access are the checkers of subscriptions with the connection's own credential
	// (contract.AccessChecking).
	Access []contract.ResourceAccessChecker
	// Installs are the install flows (contract.InstallFlows).
	Installs []contract.InstallFlow
}

var (
	_ contract.Provider       = Built{}
	_ Routes                  = Built{}
	_ contract.Syncing        = Built{}
	_ contract.AccessChecking = Built{}
	_ contract.InstallFlows   = Built{}
)

// SyncSources implements contract.Syncing.
func (b Built) SyncSources() []contract.SyncSource { return b.Sync }

// AccessCheckers implements contract.AccessChecking.
func (b Built) AccessCheckers() []contract.ResourceAccessChecker { return b.Access }

// InstallFlows implements contract.InstallFlows.
func (b Built) InstallFlows() []contract.InstallFlow { return b.Installs }

func (b Built) Webhook() contract.Webhook                            { return b.Hook }
func (b Built) RegisterHandlers(reg contract.HandlerRegistrar) error { return b.Register(reg) }
func (b Built) PersonFields() contract.PersonFields                  { return b.Fields }
func (b Built) PersonData() contract.PersonDataStore                 { return b.Mirror }

// Mount implements Routes.
func (b Built) Mount(r gin.IRouter, g Guard) error {
	if b.ReadAPI == nil {
		return nil
	}
	return b.ReadAPI(r, g)
}
