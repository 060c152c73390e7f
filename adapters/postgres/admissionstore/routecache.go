package admissionstore

// Why this file: most deliveries of a route find the routes unchanged since the last one, so
// the store remembers them and skips the routes statement; the memory is only a guess, which
// the insert's locks and epoch guard confirm or refuse (insert.go).

import (
	"strconv"
	"strings"
	"sync"

	"github.com/hephaestus-dev/hephaestus/ports"
)

// routeMemorySize bounds the routes a store remembers: a route is a source and its resources
// (for GitHub an installation and a repository), so a server that hears from more of them
// than this reads the routes of some deliveries again.
const routeMemorySize = 4096

// routeMemory remembers, per route, the routes the database last answered with the route
// epoch of the same snapshot, for transactions that recall them (see Admit). It is only ever a
// guess: an insert on remembered routes is guarded by the epoch and the locks.
type routeMemory struct {
	mu      sync.Mutex
	entries map[string]remembered
}

type remembered struct {
	routes []ports.Route
	epoch  int64
}

func (m *routeMemory) recall(key string) (remembered, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.entries[key]
	return r, ok
}

func (m *routeMemory) remember(key string, r remembered) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.entries[key]; !ok && len(m.entries) >= routeMemorySize {
		for k := range m.entries { // an arbitrary entry makes room
			delete(m.entries, k)
			break
		}
	}
	m.entries[key] = r
}

func (m *routeMemory) forget(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.entries, key)
}

// routeKey names what the routes statement reads routes by: every argument, each field
// length-prefixed so that no two routes share a key.
func routeKey(spec ports.RouteSpec, provider string, sourceConnectionID int64) string {
	var b strings.Builder
	field := func(s string) {
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	field(provider)
	field(strconv.FormatInt(sourceConnectionID, 10))
	field(spec.SourceKind)
	field(spec.SourceKey)
	field(strconv.FormatBool(spec.ConnectionWide))
	field(strconv.FormatBool(spec.RecipientsAnyConnection))
	for _, r := range spec.Resources {
		field(r.Type)
		field(r.ID)
	}
	return b.String()
}
