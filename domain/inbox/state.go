package inbox

import "fmt"

// State is the lifecycle state of a delivery row. Nobody can invent a fifth state.
type State struct{ s string }

var (
	Queued = State{"QUEUED"}
	Leased = State{"LEASED"}
	Done   = State{"DONE"}
	Dead   = State{"DEAD"}
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

func (s State) String() string { return s.s }
func (s State) IsZero() bool   { return s.s == "" }

// Ended reports whether the state is terminal for the claimers (DONE or DEAD).
func (s State) Ended() bool { return s == Done || s == Dead }
