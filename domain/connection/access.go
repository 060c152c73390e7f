package connection

import "fmt"

// Access is whether the provider vouches for a workspace's access to a subscribed resource.
// Only a Verified subscription routes deliveries; admission reads it from the database and
// never asks the provider.
type Access struct{ s string }

var (
	// Verified: the provider vouches (an App installation, or a token that read the resource
	// at the last check).
	Verified = Access{"VERIFIED"}
	// Unverified: not checked yet (no token, or set before access was checked); receives nothing.
	Unverified = Access{"UNVERIFIED"}
	// Revoked: the provider refused the last check; receives nothing until verified again.
	Revoked = Access{"REVOKED"}
)

// ParseAccess reads a stored access state.
func ParseAccess(s string) (Access, error) {
	for _, a := range []Access{Verified, Unverified, Revoked} {
		if a.s == s {
			return a, nil
		}
	}
	return Access{}, fmt.Errorf("unknown subscription access %q", s)
}

// String is the access state as the API shows it (VERIFIED, UNVERIFIED, REVOKED).
func (a Access) String() string { return a.s }

// IsZero reports whether a is the zero Access, which no subscription has.
func (a Access) IsZero() bool { return a.s == "" }

// Routes reports whether a subscription with this access receives deliveries.
func (a Access) Routes() bool { return a == Verified }
