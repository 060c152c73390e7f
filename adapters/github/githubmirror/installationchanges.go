package githubmirror

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/mirrorkit"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// The repositories an App installation grants a workspace, in its feed: each added or
// changed one publishes github.installation_repository.upserted, each one a removal made a
// tombstone github.installation_repository.deleted (the whole installation's removal too, one
// per repository that was live). The installation record itself is instance state, outside
// every workspace's feed.

// The installation repository change types.
var (
	InstallationRepositoryUpserted = change.MustType("github.installation_repository.upserted")
	InstallationRepositoryDeleted  = change.MustType("github.installation_repository.deleted")
)

// InstallationRepositoryRow is a repository an installation grants; Removed: no longer.
type InstallationRepositoryRow struct {
	InstallationID int64
	RepositoryID   int64
	FullName       string
	Private        bool
	Removed        bool
}

// InstallationViews shapes installation repositories for the change feed (githubread.Views).
type InstallationViews interface {
	InstallationRepository(InstallationRepositoryRow) any
}

var setInstallationRepositoryReporting = mirrorkit.Reporting(`SELECT * FROM github_installation_repository
	WHERE workspace_id = $1 AND installation_id = $2 AND repository_id = $3`, setInstallationRepository)

const (
	readInstallationRepositoryView = `
		SELECT installation_id, repository_id, full_name, private, deleted FROM github_installation_repository
		WHERE workspace_id = $1 AND installation_id = $2 AND repository_id = $3`
)

// removeInstallationRepositoriesReporting returns the rows the removal made tombstones, with
// their versions.
var removeInstallationRepositoriesReporting = `
WITH prior AS (SELECT repository_id FROM github_installation_repository
	WHERE workspace_id = $1 AND installation_id = $2 AND NOT deleted)` + removeInstallationRepositories + `
RETURNING installation_id, repository_id, full_name, private, deleted,
	repository_id IN (SELECT repository_id FROM prior), ` + sqlkit.MirrorVersion("github_installation_repository")

func installationRepositorySubject(installationID, repositoryID int64) string {
	return "github:installation_repository:" + strconv.FormatInt(installationID, 10) + ":" + strconv.FormatInt(repositoryID, 10)
}

func (s *Store) installationRepositoryWrite(ws int64, args []any, installationID, repositoryID int64) mirrorkit.Write {
	return mirrorkit.Write{
		Op: "set github installation repositories", Plain: setInstallationRepository, SQL: setInstallationRepositoryReporting, Args: args,
		Subject:  installationRepositorySubject(installationID, repositoryID),
		Upserted: InstallationRepositoryUpserted, Deleted: InstallationRepositoryDeleted,
		View: func(ctx context.Context, ptx pgx.Tx) (any, error) {
			return mirrorkit.Read(ctx, ptx, "read github installation repository", readInstallationRepositoryView,
				[]any{ws, installationID, repositoryID}, func(row pgx.Row, r *InstallationRepositoryRow) error {
					err := row.Scan(&r.InstallationID, &r.RepositoryID, &r.FullName, &r.Private, &r.Removed)
					return err
				}, s.installationViews().InstallationRepository)
		},
	}
}

func (s *Store) removeInstallationRepositoriesPublishing(ctx context.Context, tx ports.Tx, ws int64, args []any) error {
	ptx, err := txOf(tx)
	if err != nil {
		return err
	}
	type removed struct {
		row     InstallationRepositoryRow
		live    bool
		version string
	}
	rows, _ := ptx.Query(ctx, removeInstallationRepositoriesReporting, args...)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (removed, error) {
		var r removed
		err := row.Scan(&r.row.InstallationID, &r.row.RepositoryID, &r.row.FullName, &r.row.Private, &r.row.Removed, &r.live, &r.version)
		return r, err
	})
	if err != nil {
		return sqlkit.Interpret("remove github installation repositories", err)
	}
	for _, r := range out {
		if !r.live {
			continue // already removed: nothing changed
		}
		subject := installationRepositorySubject(r.row.InstallationID, r.row.RepositoryID)
		if err := s.feed.Publish(ctx, tx, ws, InstallationRepositoryDeleted, subject, r.version, s.installationViews().InstallationRepository(r.row)); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) installationViews() InstallationViews { return s.feed.Views() }
