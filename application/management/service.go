// Package management holds the use cases of the management API: authenticating callers,
// deciding what they may manage, and creating and changing workspaces, accounts, members,
// connections and subscriptions.
//
// Authorisation is built into the types: a workspace use case takes a Managed, which only
// Service.Manage returns after checking the caller, so no use case can run unchecked.
package management

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// MinAdminTokenLength is the shortest instance administrator token accepted, so a guessable
// placeholder cannot become the key to everything.
const MinAdminTokenLength = 16

// Config configures the service.
type Config struct {
	// AdminToken is the bearer token of the instance administrator (HEPHAESTUS_ADMIN_TOKEN).
	// Its principal is ports.InstanceAdminAccountID with InstanceAdmin set; it has no account
	// row, so it works before any account exists and is rotated by changing the configuration.
	AdminToken string
	// AccessCheckers check, with a connection's own credential, each resource a connection of
	// their kind subscribes to before the subscription commits (GitHub PAT). At most one per
	// kind; a kind without one subscribes unchecked (its source vouches at admission).
	AccessCheckers []contract.ResourceAccessChecker
	// Now is the clock of access checks (default time.Now).
	Now func() time.Time
}

func (c Config) validate() error {
	if len(c.AdminToken) < MinAdminTokenLength {
		return fmt.Errorf("management: the instance administrator token must have at least %d characters", MinAdminTokenLength)
	}
	return nil
}

// kindEntry is a connection kind with the module that declared it.
type kindEntry struct {
	kind   connection.Kind
	module contract.ProviderModule
}

// Service runs the management use cases.
type Service struct {
	adminHash   [sha256.Size]byte
	accounts    ports.AccountStore
	workspaces  ports.WorkspaceStore
	connections ports.ConnectionStore
	secrets     ports.SecretBox
	kinds       map[string]kindEntry
	checkers    map[string]contract.ResourceAccessChecker // by connection kind
	now         func() time.Time
}

// New builds the service. modules are the provider modules wired at startup; their kinds are
// the only kinds a connection can have.
func New(cfg Config, accounts ports.AccountStore, workspaces ports.WorkspaceStore,
	connections ports.ConnectionStore, secrets ports.SecretBox, modules []contract.ProviderModule,
) (*Service, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if accounts == nil || workspaces == nil || connections == nil || secrets == nil {
		return nil, errors.New("management: every store and the secret box are required")
	}
	kinds, err := indexKinds(modules)
	if err != nil {
		return nil, err
	}
	checkers := make(map[string]contract.ResourceAccessChecker, len(cfg.AccessCheckers))
	for _, c := range cfg.AccessCheckers {
		if c == nil {
			return nil, errors.New("management: nil access checker")
		}
		if _, dup := checkers[c.Kind().String()]; dup {
			return nil, fmt.Errorf("management: two access checkers for connection kind %s", c.Kind())
		}
		checkers[c.Kind().String()] = c
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Service{
		checkers: checkers,
		now:      now,
		// Only the hash is kept: Authenticate compares hashes, which have a fixed length, so
		// the comparison time does not depend on the length of the configured token either.
		adminHash:   sha256.Sum256([]byte(cfg.AdminToken)),
		accounts:    accounts,
		workspaces:  workspaces,
		connections: connections,
		secrets:     secrets,
		kinds:       kinds,
	}, nil
}

func indexKinds(modules []contract.ProviderModule) (map[string]kindEntry, error) {
	kinds := make(map[string]kindEntry)
	providers := make(map[provider.Provider]bool)
	for _, m := range modules {
		if m == nil {
			return nil, errors.New("management: nil provider module")
		}
		if providers[m.Provider()] {
			return nil, fmt.Errorf("management: two modules for provider %s", m.Provider())
		}
		providers[m.Provider()] = true
		for _, k := range m.Kinds() {
			if k.Provider() != m.Provider() {
				return nil, fmt.Errorf("management: module %s declares kind %s of provider %s", m.Provider(), k, k.Provider())
			}
			if _, dup := kinds[k.String()]; dup {
				return nil, fmt.Errorf("management: connection kind %s declared twice", k)
			}
			kinds[k.String()] = kindEntry{kind: k, module: m}
		}
	}
	return kinds, nil
}
