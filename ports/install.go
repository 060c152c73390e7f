package ports

import (
	"context"
	"time"
)

// InstallStateStore makes install-flow states single-use on every server.
type InstallStateStore interface {
	// UseInstallState records that the state with nonce was used; it needs to be remembered
	// until expiresAt, after which the state no longer verifies anyway.
	// Errors: ErrConflict when the nonce was used before (on any server).
	UseInstallState(ctx context.Context, nonce string, expiresAt time.Time) error
}
