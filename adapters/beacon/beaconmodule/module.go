// Package beaconmodule is Beacon, the example provider, as one module: its webhook, handlers,
// mirror store (publishing to the change feed), read API, teardown and person-data rules, built only from
// the shared dependencies bootstrap hands every provider (providerkit.Deps) and the kit. A
// server runs it when the module is in its list: for a real provider that is one line in
// adapters/providers (providerkit.Load(beaconmodule.LoadConfig, beaconmodule.New)); Beacon's
// is added by its spec harness to bootstrap.Config.Modules instead.
package beaconmodule

import (
	"github.com/hephaestus-dev/hephaestus/adapters/beacon"
	"github.com/hephaestus-dev/hephaestus/adapters/beacon/beaconhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/beacon/beaconmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/beacon/beaconread"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/readkit"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Module is Beacon as a module list names it.
type Module struct {
	beacon.Module
	cfg Config
}

var _ providerkit.Module = Module{}

// New is the Beacon module with its configuration.
func New(cfg Config) Module { return Module{cfg: cfg} }

// Build makes Beacon's parts from deps. Errors: a missing dependency.
func (m Module) Build(deps providerkit.Deps) (contract.Provider, error) {
	// One declaration of where a person is named, for the inbox, the mirror's views and the
	// change feed.
	fields, err := beaconread.PersonFields()
	if err != nil {
		return nil, err
	}
	store, err := beaconmirror.New(deps.Pool)
	if err != nil {
		return nil, err
	}
	if err := store.PublishChanges(deps.Changes, beaconread.Views{}); err != nil {
		return nil, err
	}
	handlers := beaconhandlers.Deps{Inbox: deps.Inbox, Store: store, MaxTitleBytes: m.cfg.MaxTitleBytes}
	return providerkit.Built{
		ProviderModule: m.Module,
		Hook:           beacon.NewWebhook(beacon.Config{}),
		Register:       func(reg contract.HandlerRegistrar) error { return beaconhandlers.Register(reg, handlers) },
		Fields:         fields,
		Mirror:         store,
		ReadAPI:        readkit.ReadAPI(beaconread.Register, beaconread.Store(store)),
		Sync:           []contract.SyncSource{beaconmirror.TeardownSource{Store: store}},
	}, nil
}
