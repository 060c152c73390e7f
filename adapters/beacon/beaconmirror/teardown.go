package beaconmirror

import (
	"context"
	"errors"

	"github.com/hephaestus-dev/hephaestus/adapters/beacon"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/mirrorkit"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/domain/syncjob"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Teardown of an uninstalled Beacon connection, in the teardown's transaction after the
// UNINSTALLED transition committed. Mirror rows carry no connection and a Beacon connection has
// no subscriptions, so what one connection brought cannot be told apart while another lives:
// the rows stay until the workspace's last live Beacon connection goes, and then every Beacon
// row of the workspace goes, with the data of every Beacon change, and connection.torn_down
// says so.

var workspaceTeardown = []string{
	`DELETE FROM beacon_incident WHERE workspace_id = $1`,
}

// TeardownConnection deletes what the connection connectionID of workspaceID brought.
// Errors: database failures.
func (s *Store) TeardownConnection(ctx context.Context, tx ports.Tx, workspaceID, connectionID int64) error {
	ptx, err := sqlkit.PgxTx(tx)
	if err != nil {
		return err
	}
	others, err := mirrorkit.OtherLiveConnection(ctx, ptx, beacon.Provider, workspaceID, connectionID)
	if err != nil || others {
		return err
	}
	if _, err := mirrorkit.Teardown[string](ctx, ptx, "tear down beacon mirror", workspaceID, nil, nil, true, workspaceTeardown); err != nil {
		return err
	}
	return s.feed.Teardown(ctx, tx, beacon.Provider, workspaceID, connectionID,
		ports.ChangeSelection{TypePrefix: "beacon.", All: true}, nil, true)
}

// TeardownSource is the store as the sync job runner pages a Beacon teardown job
// (contract.SyncSource): one page that runs TeardownConnection in the page's transaction.
// Beacon has no backfill, so every other job is refused.
type TeardownSource struct{ Store *Store }

var _ contract.SyncSource = TeardownSource{}

func (TeardownSource) Provider() provider.Provider { return beacon.Provider }

// NextPage errors: a permanent *inbox.ProviderError for a job that is not a teardown.
func (t TeardownSource) NextPage(_ context.Context, job ports.SyncJob, _ string) (ports.SyncPage, error) {
	if job.Kind != syncjob.Teardown {
		return ports.SyncPage{}, &inbox.ProviderError{Provider: "beacon", Op: "sync " + job.ResourceType, Kind: inbox.ProviderRefused,
			Err: errors.New("beacon has no backfill")}
	}
	return ports.SyncPage{Done: true, Write: func(ctx context.Context, tx ports.Tx) error {
		return t.Store.TeardownConnection(ctx, tx, job.WorkspaceID, job.ConnectionID)
	}}, nil
}
