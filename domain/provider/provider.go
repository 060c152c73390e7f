// Package provider names a webhook provider. The set is open on purpose: each provider adapter
// defines its own value (adapters/github defines GITHUB), so adding a provider touches nothing
// in domain/ or application/.
package provider

import (
	"fmt"
	"regexp"
	"strings"
)

// Provider is a provider name as the contract writes it: "GITHUB", "GITLAB", "SLACK", "OUTLINE".
type Provider struct{ name string }

var providerName = regexp.MustCompile(`^[A-Z][A-Z0-9_]{1,30}$`)

// New validates a provider name (upper-case letters, digits and '_').
func New(name string) (Provider, error) {
	if !providerName.MatchString(name) {
		return Provider{}, fmt.Errorf("invalid provider name %q", name)
	}
	return Provider{name: name}, nil
}

// MustNew is New for names fixed at compile time.
func MustNew(name string) Provider {
	p, err := New(name)
	if err != nil {
		panic(err)
	}
	return p
}

// Restore rebuilds a provider read from storage.
func Restore(name string) Provider { return Provider{name: name} }

// String is the provider as the API writes it (GITHUB, GITLAB, SLACK, OUTLINE).
func (p Provider) String() string { return p.name }

// IsZero reports whether p is the zero Provider.
func (p Provider) IsZero() bool { return p.name == "" }

// Label is the lower-case form used in metric labels, subjects and URLs ("github").
func (p Provider) Label() string { return strings.ToLower(p.name) }

// Set is the providers a server runs: what a read filter's provider may name.
type Set struct{ names map[string]bool }

// NewSet is the set of ps.
func NewSet(ps ...Provider) Set {
	s := Set{names: make(map[string]bool, len(ps))}
	for _, p := range ps {
		s.names[p.name] = true
	}
	return s
}

// Has reports whether name is one of the set's providers.
func (s Set) Has(name string) bool { return s.names[name] }
