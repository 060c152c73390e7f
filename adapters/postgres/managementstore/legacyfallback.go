package managementstore

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
)

// LegacyFallback is whether connection secrets sealed before key ids still open (migration
// 00146, credentials_state). Such a value has no associated data, so nothing binds it to its
// connection: it opens for any connection id it is read for. The service opens them only until
// `hephaestus rotate-credentials` has re-sealed every secret and closed the fallback, which is
// for good. Its Opens is the legacy gate of the server's secret box
// (secrets.AESGCM.WithLegacyGate), asked only for a value that opens in the legacy form alone.
type LegacyFallback struct {
	pool    *pgxpool.Pool
	timeout time.Duration
	closed  atomic.Bool // seen closed once: closed for good, never read again
}

// NewLegacyFallback builds the gate on pool.
func NewLegacyFallback(pool *pgxpool.Pool) (*LegacyFallback, error) {
	if pool == nil {
		return nil, errors.New("postgres management: nil pool")
	}
	return &LegacyFallback{pool: pool, timeout: 5 * time.Second}, nil
}

const (
	// legacyFallbackClosed reads the one row without a lock: a rotation that closes it after
	// this read only has to stop the next read. No row (a truncated table) is open, as the
	// migration leaves it.
	legacyFallbackClosed = `SELECT EXISTS (SELECT 1 FROM credentials_state WHERE legacy_closed_at IS NOT NULL)`
	// closeLegacyFallback keeps the first closing time; the upsert restores a missing row.
	closeLegacyFallback = `
		INSERT INTO credentials_state (id, legacy_closed_at) VALUES (true, clock_timestamp())
		ON CONFLICT (id) DO UPDATE SET legacy_closed_at = coalesce(credentials_state.legacy_closed_at, excluded.legacy_closed_at)`
)

// Opens reports whether values sealed before key ids still open. Closed is kept once seen
// (closing is for good); open is read again each time, which costs a read only for a legacy
// value (every server start re-seals those it finds, so there are hardly any). A read that
// fails answers false: the value does not open this time, and nothing opens that should not.
func (f *LegacyFallback) Opens() bool {
	if f.closed.Load() {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	var closed bool
	if err := f.pool.QueryRow(ctx, legacyFallbackClosed).Scan(&closed); err != nil {
		return false
	}
	if closed {
		f.closed.Store(true)
	}
	return !closed
}

// Close closes the fallback for good, on every server at its next legacy value
// (`hephaestus rotate-credentials`, once every secret is sealed in the current form).
// Errors: a database error.
func (f *LegacyFallback) Close(ctx context.Context) error {
	if _, err := f.pool.Exec(ctx, closeLegacyFallback); err != nil {
		return sqlkit.Interpret("close legacy credentials fallback", err)
	}
	f.closed.Store(true)
	return nil
}
