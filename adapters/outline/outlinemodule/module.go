// Package outlinemodule is the Outline provider as one module: its webhook, handlers, mirror
// store (publishing to the change feed), read API, sync source and person-data rules, built
// from the shared dependencies bootstrap hands every provider (providerkit.Deps).
package outlinemodule

import (
	"fmt"

	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlineapi"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinehandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemirror"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlineread"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinesync"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/readkit"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Module is Outline as adapters/providers lists it.
type Module struct {
	outline.Module
	cfg Config
}

var _ providerkit.Module = Module{}

// New is the Outline module with its configuration.
func New(cfg Config) Module { return Module{cfg: cfg} }

// Build makes Outline's parts. Errors: a missing dependency, an invalid API URL.
func (m Module) Build(deps providerkit.Deps) (contract.Provider, error) {
	// The payload fields and the read API's view members: one declaration for the inbox,
	// the mirror's views and the change feed.
	fields, err := outlineread.PersonFields()
	if err != nil {
		return nil, err
	}
	hook, err := outline.NewWebhook(outline.Config{})
	if err != nil {
		return nil, err
	}
	store, err := providerkit.NewMirror(deps, outlinemirror.New, outlinemirror.Views(outlineread.Views{}))
	if err != nil {
		return nil, err
	}
	handlers := outlinehandlers.Deps{Inbox: deps.Inbox, Store: store}
	// A backfill reads with the connection's own API token (the secret only signs webhooks),
	// and only from the configured instance.
	var reader outlinesync.Reader
	var client *outlineapi.Client
	if m.cfg.APIURL != "" {
		if client, err = outlineapi.New(outlineapi.Config{BaseURL: m.cfg.APIURL}); err != nil {
			return nil, fmt.Errorf("HEPHAESTUS_OUTLINE_API_URL: %w", err)
		}
		reader = client
	}
	// Every subscription is verified with the connection's own API key on that instance
	// (collections.info); without the instance nothing can be verified.
	access := outlineapi.NewCollectionAccess(client)
	if deps.Secrets == nil {
		return nil, fmt.Errorf("outline module: the live secrets reader is required")
	}
	source, err := outlinesync.New(reader, deps.Secrets, store)
	if err != nil {
		return nil, err
	}
	return providerkit.Built{
		ProviderModule: m.Module,
		Hook:           hook,
		Register:       func(reg contract.HandlerRegistrar) error { return outlinehandlers.Register(reg, handlers) },
		Fields:         fields,
		Mirror:         store,
		ReadAPI:        readkit.ReadAPI(outlineread.Register, outlineread.Store(store)),
		Sync:           []contract.SyncSource{source},
		Access:         []contract.ResourceAccessChecker{access},
	}, nil
}
