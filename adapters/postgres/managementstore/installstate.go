package managementstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// InstallStates records used install-flow state nonces (install_state_use).
type InstallStates struct {
	pool *pgxpool.Pool
}

var _ ports.InstallStateStore = (*InstallStates)(nil)

// NewInstallStates builds the store.
func NewInstallStates(pool *pgxpool.Pool) (*InstallStates, error) {
	if pool == nil {
		return nil, errors.New("postgres management: nil pool")
	}
	return &InstallStates{pool: pool}, nil
}

const (
	// useInstallState inserts the nonce or nothing: the primary key decides between two
	// servers handling the same state at once, and the loser inserts no row.
	useInstallState = `INSERT INTO install_state_use (nonce, expires_at) VALUES ($1, $2) ON CONFLICT (nonce) DO NOTHING`
	// forgetExpiredStates keeps the table small; a state past its expiry is refused before its
	// nonce is looked at, so its row is no longer needed.
	forgetExpiredStates = `DELETE FROM install_state_use WHERE expires_at < clock_timestamp() - interval '1 minute'`
)

// UseInstallState implements ports.InstallStateStore.
func (s *InstallStates) UseInstallState(ctx context.Context, nonce string, expiresAt time.Time) error {
	if _, err := s.pool.Exec(ctx, forgetExpiredStates); err != nil {
		return sqlkit.Interpret("forget expired install states", err)
	}
	tag, err := s.pool.Exec(ctx, useInstallState, nonce, expiresAt)
	if err != nil {
		return sqlkit.Interpret("use install state", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("install state: %w", ports.Reject(ports.ErrConflict, "state-used", ""))
	}
	return nil
}
