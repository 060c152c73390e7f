package inbox

import "fmt"

// State is the lifecycle state of a delivery row. Nobody can invent a fifth state.
type State struct{ s string }

var (
	// Queued is a row waiting to be claimed.
	Queued = State{"QUEUED"}
	// Leased is a row a claimer holds under a lease.
	Leased = State{"LEASED"}
	// Done is a handled row, kept for the replay window.
	Done = State{"DONE"}
	// Dead is a row that failed for good, kept for the dead retention.
	Dead = State{"DEAD"}
)

// States lists every state in lifecycle order.
func States() []State { return []State{Queued, Leased, Done, Dead} }

// ParseState reads a state as stored ("QUEUED", …).
func ParseState(s string) (State, error) {
	for _, st := range States() {
		if st.s == s {
			return st, nil
		}
	}
	return State{}, fmt.Errorf("unknown delivery state %q", s)
}

// String is the state as stored and shown.
func (s State) String() string { return s.s }

// IsZero reports whether s is the zero State.
func (s State) IsZero() bool { return s.s == "" }

// Ended reports whether the state is terminal for the claimers (DONE or DEAD).
func (s State) Ended() bool { return s == Done || s == Dead }
