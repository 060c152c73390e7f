package contract

import (
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Provider is one provider module: everything a provider brings to the service, built in the
// provider's own folder (adapters/<provider>/<provider>module) and collected by bootstrap into
// one list. The core reads providers only through this description, so adding one changes
// nothing in domain/, application/ or ports/.
//
// Besides the methods below, a module may implement the optional parts a provider may or may
// not have: AccessChecking, BackgroundWork, StepNameRules, InstallationSource, and (for its
// HTTP routes, an adapter-level concern) providerkit.Routes.
type Provider interface {
	// ProviderModule is the provider's connection kinds, config validation and resource types.
	ProviderModule
	// Webhook is the provider's receiving side: verifier, envelope parser, subject and key.
	Webhook() Webhook
	// RegisterHandlers adds the provider's handlers, one per event type, to reg.
	RegisterHandlers(reg HandlerRegistrar) error
	// PersonFields declares where the provider's payloads name a person (erasure of the inbox).
	PersonFields() PersonFields
	// PersonData is the provider's mirror store as person erasure runs it.
	PersonData() PersonDataStore
}

// HandlerRegistrar is the consumer's handler registry as a provider module fills it.
type HandlerRegistrar interface {
	Register(p provider.Provider, eventType string, h ports.Handler) error
}

// AccessChecking is implemented by a module whose connections subscribe only to what their own
// credential can read: its checkers run before a subscription commits and in the periodic recheck.
type AccessChecking interface {
	AccessCheckers() []ResourceAccessChecker
}

// BackgroundWork is implemented by a module with loops of its own (a provider's reconciler).
type BackgroundWork interface {
	Runners() []ports.Runner
}

// StepNameRules is implemented by a module whose step names may carry identifiers that name a
// person or a conversation (inbox.ValidateStepName refuses a step name any rule matches).
type StepNameRules interface {
	// PersonalStepNamePart reports whether one '-'/':'-separated part of a step name is such an
	// identifier.
	PersonalStepNamePart(part string) bool
}

// InstallationSource is implemented by the module whose control events (installations) arrive
// without a connection to take the source namespace from: its default source server URL.
type InstallationSource interface {
	DefaultSourceServerURL() string
}

// CounterSpec is an unlabelled counter a provider exports, at 0 from start.
type CounterSpec struct{ Name, Help string }

// CounterDeclarer is implemented by a provider module (its static part) with counters of its
// own, so they are on /metrics before the database is up.
type CounterDeclarer interface {
	Counters() []CounterSpec
}

// InstallFlows is implemented by a module with install flows (an App installation, an OAuth
// install), run by application/installflow.
type InstallFlows interface {
	InstallFlows() []InstallFlow
}

// Syncing is implemented by a module that backfills its mirror and tears down an uninstalled
// connection's data (CONTRACT.md "Sync and teardown"): its sources run under the backfill runner.
type Syncing interface {
	SyncSources() []SyncSource
}
