package consumer

import "github.com/hephaestus-dev/hephaestus/ports"

// Signal wakes this server's claim loop after admission committed rows (ProviderEventNotifications
// of the seed, in process: the inbox opens no LISTEN connection). Notify never blocks and
// coalesces: any number of notifications before the claim loop looks count as one wake-up.
type Signal struct {
	ch chan struct{}
}

var _ ports.Notifier = (*Signal)(nil)

// NewSignal returns a signal nobody has notified yet.
func NewSignal() *Signal { return &Signal{ch: make(chan struct{}, 1)} }

// Notify implements ports.Notifier.
func (s *Signal) Notify() {
	select {
	case s.ch <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// C is received from once per coalesced wake-up.
func (s *Signal) C() <-chan struct{} { return s.ch }
