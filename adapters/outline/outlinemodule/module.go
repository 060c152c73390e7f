// Package outlinemodule is the Outline provider as one module: its webhook, handlers, mirror
// store (publishing to the change feed), read API and person-data rules, built from the shared
// dependencies bootstrap hands every provider (providerkit.Deps).
package outlinemodule

import (
	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinehandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemirror"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlineread"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Module is Outline as bootstrap lists it. Outline needs no instance configuration: each
// connection has its own URL and signing secret.
type Module struct{ outline.Module }

var _ providerkit.Module = Module{}

// New is the Outline module.
func New() Module { return Module{} }

// Build makes Outline's parts. Errors: a missing dependency.
func (m Module) Build(deps providerkit.Deps) (ports.Provider, error) {
	hook, err := outline.NewWebhook(outline.Config{})
	if err != nil {
		return nil, err
	}
	store, err := outlinemirror.New(deps.Pool)
	if err != nil {
		return nil, err
	}
	if err := store.PublishChanges(deps.Changes, outlineread.Views{}); err != nil {
		return nil, err
	}
	handlers := outlinehandlers.Deps{Inbox: deps.Inbox, Store: store}
	return providerkit.Built{
		ProviderModule: m.Module,
		Hook:           hook,
		Register:       func(reg ports.HandlerRegistrar) error { return outlinehandlers.Register(reg, handlers) },
		Fields:         outline.PersonFields(),
		Mirror:         store,
		ReadAPI: func(r gin.IRouter, g providerkit.Guard) error {
			return outlineread.Register(r, outlineread.Config{Auth: g.Auth, Members: g.Members, Store: store, Log: g.Log})
		},
	}, nil
}
