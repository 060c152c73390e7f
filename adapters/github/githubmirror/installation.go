package githubmirror

import (
	"context"
	"errors"
	"strconv"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmodel"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/mirrorkit"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/jackc/pgx/v5"
)

// The App installation's writes: its connection's lifecycle and the installation record,
// instance state outside every workspace's feed, and the repositories it grants a workspace
// (installationchanges.go).

// LockAppConnection implements githubmodel.InstallationWriter.
func (s *Store) LockAppConnection(ctx context.Context, tx ports.Tx, installationID int64) (githubmodel.AppConnection, bool, error) {
	ptx, err := txOf(tx)
	if err != nil {
		return githubmodel.AppConnection{}, false, err
	}
	var (
		c     githubmodel.AppConnection
		state string
	)
	err = ptx.QueryRow(ctx, lockAppConnection, strconv.FormatInt(installationID, 10)).
		Scan(&c.ID, &c.WorkspaceID, &state)
	if errors.Is(err, pgx.ErrNoRows) {
		return githubmodel.AppConnection{}, false, nil
	}
	if err != nil {
		return githubmodel.AppConnection{}, false, sqlkit.Interpret("lock github app connection", err)
	}
	if c.State, err = connection.ParseState(state); err != nil {
		return githubmodel.AppConnection{}, false, err
	}
	return c, true, nil
}

// SetAppConnectionState implements githubmodel.InstallationWriter.
// The handler sets a state only when the state machine moved it, so each call is a change: with
// a connection publisher wired it publishes connection.state_changed in the same transaction.
func (s *Store) SetAppConnectionState(ctx context.Context, tx ports.Tx, connectionID int64, st connection.State) error {
	ptx, err := txOf(tx)
	if err != nil {
		return err
	}
	var ws int64
	if err := ptx.QueryRow(ctx, setAppConnectionState, connectionID, st.String()).Scan(&ws); err != nil {
		return sqlkit.Interpret("set github app connection state", err)
	}
	return s.connections.Changed(ctx, tx, ws, connectionID)
}

// PublishConnectionStates makes SetAppConnectionState publish through p.
func (s *Store) PublishConnectionStates(p mirrorkit.ConnectionStatePublisher) error {
	return s.connections.Set(p)
}

// RecordInstallation implements githubmodel.InstallationWriter.
func (s *Store) RecordInstallation(ctx context.Context, tx ports.Tx, in githubmodel.Installation) (bool, error) {
	ptx, err := txOf(tx)
	if err != nil {
		return false, err
	}
	var one int
	err = ptx.QueryRow(ctx, recordInstallation, in.ID, in.AccountID, in.AccountLogin, in.AccountType, in.TargetType,
		in.RepositorySelection, in.State, in.LastAction, in.ConnectionID, at(in.Version), in.Version.EventID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil // the stored record is newer: ON CONFLICT … WHERE returned no row
	}
	if err != nil {
		return false, sqlkit.Interpret("record github installation", err)
	}
	return true, nil
}

// RenameInstallationAccount implements githubmodel.InstallationWriter.
func (s *Store) RenameInstallationAccount(ctx context.Context, tx ports.Tx, installationID int64, login string, v githubmodel.Version) error {
	return exec(ctx, tx, "rename github installation account", renameInstallationAccount, installationID, login, v.EventID)
}

// SetInstallationRepositories implements githubmodel.InstallationWriter.
func (s *Store) SetInstallationRepositories(ctx context.Context, tx ports.Tx, ws int64, repos []githubmodel.InstallationRepository) error {
	repos = sortedBy(repos, func(r githubmodel.InstallationRepository) string {
		return idKey(r.InstallationID) + idKey(r.RepositoryID)
	})
	writes := make([]mirrorkit.Write, 0, len(repos))
	for _, r := range repos {
		writes = append(writes, s.installationRepositoryWrite(ws, []any{ws, r.InstallationID, r.RepositoryID, r.FullName,
			r.Private, r.Deleted, at(r.Version), r.Version.EventID}, r.InstallationID, r.RepositoryID))
	}
	return s.feed.WriteAll(ctx, tx, ws, writes)
}

// RemoveInstallationRepositories implements githubmodel.InstallationWriter.
func (s *Store) RemoveInstallationRepositories(ctx context.Context, tx ports.Tx, ws, installationID int64, v githubmodel.Version) error {
	args := []any{ws, installationID, at(v), v.EventID}
	if s.feed.On() {
		return s.removeInstallationRepositoriesPublishing(ctx, tx, ws, args)
	}
	return exec(ctx, tx, "remove github installation repositories", removeInstallationRepositories, args...)
}
