package consumer

import (
	"errors"
	"fmt"
	"sync"

	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Registry is a map-based ports.HandlerRegistry. Handlers are registered at wiring time;
// Lookup is safe while other goroutines register.
type Registry struct {
	mu       sync.RWMutex
	handlers map[registryKey]ports.Handler
}

type registryKey struct {
	provider  provider.Provider
	eventType string
}

var _ ports.HandlerRegistry = (*Registry)(nil)

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{handlers: make(map[registryKey]ports.Handler)}
}

// Register makes h the handler of p's eventType. Errors: a missing provider, event type or
// handler, or a second handler for the same pair (a wiring mistake, refused rather than
// silently replacing the first).
func (r *Registry) Register(p provider.Provider, eventType string, h ports.Handler) error {
	if p.IsZero() || eventType == "" || h == nil {
		return errors.New("register handler: provider, event type and handler are required")
	}
	k := registryKey{provider: p, eventType: eventType}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.handlers[k]; dup {
		return fmt.Errorf("register handler: %s %q already has a handler", p, eventType)
	}
	r.handlers[k] = h
	return nil
}

// Lookup implements ports.HandlerRegistry.
func (r *Registry) Lookup(p provider.Provider, eventType string) (ports.Handler, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	h, ok := r.handlers[registryKey{provider: p, eventType: eventType}]
	return h, ok
}
