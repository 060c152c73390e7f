// Package workspace holds the rules of workspaces and their members: what a slug may look like
// and which member roles exist.
package workspace

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// slugPattern keeps slugs usable as one URL path segment without escaping.
var slugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// MaxNameLength bounds a display name (in characters).
const MaxNameLength = 200

// InvitationLifetime is how long an invitation to a workspace can be accepted; inviting the
// same login again starts it anew.
const InvitationLifetime = 7 * 24 * time.Hour

var (
	// ErrInvalidSlug: the slug does not match ^[a-z0-9][a-z0-9-]{0,62}$.
	ErrInvalidSlug = errors.New("invalid workspace slug")
	// ErrInvalidName: the name is blank or longer than MaxNameLength.
	ErrInvalidName = errors.New("invalid workspace name")
)

// CheckSlug returns ErrInvalidSlug unless s is a valid slug.
func CheckSlug(s string) error {
	if !slugPattern.MatchString(s) {
		return fmt.Errorf("%w: %q", ErrInvalidSlug, s)
	}
	return nil
}

// CheckName returns ErrInvalidName for a blank or overlong display name.
func CheckName(s string) error {
	if strings.TrimSpace(s) == "" || utf8.RuneCountInString(s) > MaxNameLength {
		return ErrInvalidName
	}
	return nil
}

// Role is a member's role in a workspace.
type Role struct{ s string }

var (
	// Admin manages the workspace: its connections, subscriptions, members and dead letters.
	Admin = Role{"ADMIN"}
	// Member belongs to the workspace but manages nothing.
	Member = Role{"MEMBER"}
)

// ParseRole reads a role as written in the API and stored ("ADMIN", "MEMBER").
func ParseRole(s string) (Role, error) {
	for _, r := range []Role{Admin, Member} {
		if r.s == s {
			return r, nil
		}
	}
	return Role{}, fmt.Errorf("unknown workspace role %q", s)
}

// String is the role as the API writes it (ADMIN, MEMBER).
func (r Role) String() string { return r.s }

// IsZero reports whether r is the zero Role.
func (r Role) IsZero() bool { return r.s == "" }

// Manages reports whether a member with this role manages the workspace. Only ADMIN does.
func (r Role) Manages() bool { return r == Admin }
