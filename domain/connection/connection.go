// Package connection models a workspace's link to a provider: its kind, its lifecycle state
// machine and which states admit deliveries.
package connection

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/hephaestus-dev/hephaestus/domain/provider"
)

// Kind is a kind of connection ("GITHUB_APP", "GITHUB_PAT", "GITLAB", …). Provider adapters
// declare their kinds; the set is open so a new provider adds kinds without touching domain/.
type Kind struct {
	name             string
	provider         provider.Provider
	webhookURL       bool
	secret           bool
	alreadyConnected string
	apiToken         bool
}

var (
	kindName       = regexp.MustCompile(`^[A-Z][A-Z0-9_]{1,40}$`)
	conflictReason = regexp.MustCompile(`^[a-z][a-z0-9-]{1,60}$`)
)

// KindSpec describes a kind: its provider, whether the provider posts to a per-connection URL
// (then the connection verifies deliveries with its own secret) and whether a secret is needed.
type KindSpec struct {
	Name          string
	Provider      provider.Provider
	WebhookURL    bool
	RequireSecret bool
	// AlreadyConnected is the conflict reason answered when a live connection of this kind
	// already has the source key: the kind's migration enforces one live connection per key
	// with a unique index named uq_connection_<…>. Empty: the kind has no such index.
	AlreadyConnected string
	// APIToken: a connection of this kind may also hold an API token of the provider, apart
	// from its webhook secret, for the provider reads of its sync jobs (stored sealed, never
	// shown). Kinds without it refuse one.
	APIToken bool
}

// NewKind validates a kind specification.
func NewKind(s KindSpec) (Kind, error) {
	if !kindName.MatchString(s.Name) {
		return Kind{}, fmt.Errorf("invalid connection kind %q", s.Name)
	}
	if s.Provider.IsZero() {
		return Kind{}, fmt.Errorf("connection kind %s needs a provider", s.Name)
	}
	if s.WebhookURL && !s.RequireSecret {
		return Kind{}, fmt.Errorf("connection kind %s posts to its own URL and so needs a secret", s.Name)
	}
	if s.AlreadyConnected != "" && !conflictReason.MatchString(s.AlreadyConnected) {
		return Kind{}, fmt.Errorf("connection kind %s: invalid conflict reason %q", s.Name, s.AlreadyConnected)
	}
	return Kind{name: s.Name, provider: s.Provider, webhookURL: s.WebhookURL, secret: s.RequireSecret,
		alreadyConnected: s.AlreadyConnected, apiToken: s.APIToken}, nil
}

// MustKind is NewKind for kinds fixed at compile time.
func MustKind(s KindSpec) Kind {
	k, err := NewKind(s)
	if err != nil {
		panic(err)
	}
	return k
}

// String is the kind as the API names it (GITHUB_APP, GITHUB_PAT, GITLAB, SLACK, OUTLINE).
func (k Kind) String() string { return k.name }

// IsZero reports whether k is the zero Kind, which no connection has.
func (k Kind) IsZero() bool { return k.name == "" }

// Provider is the provider whose deliveries a connection of this kind receives.
func (k Kind) Provider() provider.Provider { return k.provider }

// HasWebhookURL reports whether the provider posts to a per-connection URL (/webhooks/<provider>/{id}).
func (k Kind) HasWebhookURL() bool { return k.webhookURL }

// RequiresSecret reports whether a connection of this kind must be created with a secret.
func (k Kind) RequiresSecret() bool { return k.secret }

// AcceptsAPIToken reports whether a connection of the kind may hold a provider API token
// (KindSpec.APIToken).
func (k Kind) AcceptsAPIToken() bool { return k.apiToken }

// AlreadyConnected is the kind's conflict reason for a second live connection of one source
// key ("" when the kind has none).
func (k Kind) AlreadyConnected() string { return k.alreadyConnected }

// State is the lifecycle state of a connection.
type State struct{ s string }

var (
	// Active is a connection that admits deliveries and reads its provider.
	Active = State{"ACTIVE"}
	// Suspended is a connection that admits nothing until it is activated again.
	Suspended = State{"SUSPENDED"}
	// Uninstalled is a connection whose provider installation is gone; its mirrored data is torn down.
	Uninstalled = State{"UNINSTALLED"}
)

// ParseState reads a state as stored.
func ParseState(s string) (State, error) {
	for _, st := range []State{Active, Suspended, Uninstalled} {
		if st.s == s {
			return st, nil
		}
	}
	return State{}, fmt.Errorf("unknown connection state %q", s)
}

// String is the state as the API shows it.
func (s State) String() string { return s.s }

// IsZero reports whether s is the zero State, which no connection has.
func (s State) IsZero() bool { return s.s == "" }

// Admits reports whether a connection in this state may admit a workspace row. Only ACTIVE does.
func (s State) Admits() bool { return s == Active }

// Action is a lifecycle transition requested by an operator or a provider control event.
type Action struct{ s string }

var (
	// Activate makes a SUSPENDED or UNINSTALLED connection ACTIVE.
	Activate = Action{"activate"}
	// Suspend makes an ACTIVE connection SUSPENDED.
	Suspend = Action{"suspend"}
	// Uninstall makes an ACTIVE or SUSPENDED connection UNINSTALLED.
	Uninstall = Action{"uninstall"}
)

// ParseAction reads an action from the API path.
func ParseAction(s string) (Action, error) {
	for _, a := range []Action{Activate, Suspend, Uninstall} {
		if a.s == s {
			return a, nil
		}
	}
	return Action{}, fmt.Errorf("unknown lifecycle action %q", s)
}

// String is the action as the lifecycle route names it.
func (a Action) String() string { return a.s }

// ErrForbiddenTransition is returned for a transition the state machine forbids (API: 409).
var ErrForbiddenTransition = errors.New("forbidden connection transition")

// Next is the state after action, or ErrForbiddenTransition:
//
//	ACTIVE --suspend--> SUSPENDED --activate--> ACTIVE
//	ACTIVE|SUSPENDED --uninstall--> UNINSTALLED --activate--> ACTIVE
//
// Who may ask for UNINSTALLED --activate--> is the application's rule: for a shared-URL kind
// (GITHUB_APP, SLACK) only the instance administrator (application/management.Transition); a
// provider's installation event never revives an UNINSTALLED connection.
func (s State) Next(a Action) (State, error) {
	switch {
	case a == Suspend && s == Active:
		return Suspended, nil
	case a == Activate && (s == Suspended || s == Uninstalled):
		return Active, nil
	case a == Uninstall && (s == Active || s == Suspended):
		return Uninstalled, nil
	}
	return State{}, fmt.Errorf("%w: %s a %s connection", ErrForbiddenTransition, a, s)
}
