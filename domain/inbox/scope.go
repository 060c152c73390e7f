package inbox

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// maxKeyLength bounds subjects and scope keys: they are index keys, not payload.
const maxKeyLength = 300

// Subject is the resource a delivery is about, in a provider's stable ids
// ("github:repository:1296269"), never a name that changes on rename or transfer, and never the
// event token (event type, action or delivery id): every event of one resource shares it.
// Provider adapters build subjects through their SubjectKeyDeriver.
type Subject struct{ s string }

// NewSubject builds "<provider>:<kind>:<id>[:<id>…]" from lower-case provider and kind labels
// and stable ids. Parts must be non-empty printable text without ':' or white space.
func NewSubject(providerLabel, kind string, ids ...string) (Subject, error) {
	if len(ids) == 0 {
		return Subject{}, errors.New("subject needs at least one id")
	}
	parts := append([]string{providerLabel, kind}, ids...)
	for _, p := range parts {
		if err := checkKeyPart(p); err != nil {
			return Subject{}, fmt.Errorf("subject: %w", err)
		}
	}
	s := strings.Join(parts, ":")
	if len(s) > maxKeyLength-40 { // leaves room for the workspace prefix of the scope key
		return Subject{}, fmt.Errorf("subject longer than %d bytes", maxKeyLength-40)
	}
	return Subject{s: s}, nil
}

// RestoreSubject rebuilds a subject read from storage without creation-time checks.
func RestoreSubject(s string) Subject { return Subject{s: s} }

// String is the subject as stored.
func (s Subject) String() string { return s.s }

// IsZero reports whether s is the zero Subject.
func (s Subject) IsZero() bool { return s.s == "" }

func checkKeyPart(p string) error {
	if p == "" {
		return errors.New("empty part")
	}
	for _, r := range p {
		if r == ':' || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return fmt.Errorf("part %q has a separator, space or control character", p)
		}
	}
	return nil
}

// ScopeKey serialises deliveries: one scope is one resource of one workspace. Rows of a scope
// are handled one at a time in row id order; rows of different scopes run in parallel.
type ScopeKey struct{ s string }

// systemScope is shared by every installation control event, whatever organisation it names:
// their handlers create and repair connections, so they must not overtake each other.
var systemScope = ScopeKey{s: "system:installation"}

// SystemScope is the one scope of installation control events (NULL workspace).
func SystemScope() ScopeKey { return systemScope }

// WorkspaceScope is the scope of a work delivery: its workspace and its subject.
func WorkspaceScope(workspaceID int64, subject Subject) (ScopeKey, error) {
	if workspaceID <= 0 {
		return ScopeKey{}, errors.New("work scope needs a workspace")
	}
	if subject.IsZero() {
		return ScopeKey{}, errors.New("work scope needs a subject")
	}
	return ScopeKey{s: "ws:" + strconv.FormatInt(workspaceID, 10) + ":" + subject.s}, nil
}

// RestoreScopeKey rebuilds a scope key read from storage.
func RestoreScopeKey(s string) ScopeKey { return ScopeKey{s: s} }

// String is the scope key as stored in scope_key.
func (k ScopeKey) String() string { return k.s }

// IsZero reports whether k is the zero ScopeKey.
func (k ScopeKey) IsZero() bool { return k.s == "" }

// IsSystem reports whether k is the one scope every installation control event shares.
func (k ScopeKey) IsSystem() bool { return k == systemScope }
