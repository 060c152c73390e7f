package outlinemirror

import (
	"context"

	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/mirrorkit"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Teardown of an uninstalled Outline connection (CONTRACT.md "Sync and teardown"), in the
// teardown job's transaction, after the UNINSTALLED transition committed. As for GitHub and
// GitLab, subscriptions decide what the connection brought (mirror rows carry no connection,
// and an uninstall keeps the subscriptions): a collection it subscribed to that no other live
// Outline connection of the workspace subscribes to is deleted with its documents and the event
// records of the collection and of those documents. With no live Outline connection left,
// every Outline row of the workspace goes, including the records of events that named no
// collection (users, groups), which cannot be told apart by connection while another
// connection lives.

const tornDownCollections = `
SELECT COALESCE(array_agg(DISTINCT s.resource_id), '{}') FROM connection_subscription s
WHERE s.connection_id = $2 AND s.workspace_id = $1 AND s.resource_type = 'collection'
  AND NOT EXISTS (
	SELECT 1 FROM connection_subscription o JOIN connection k ON k.id = o.connection_id
	WHERE o.workspace_id = $1 AND k.workspace_id = $1 AND k.id <> $2 AND k.provider = 'OUTLINE'
	  AND k.state <> 'UNINSTALLED' AND o.resource_type = 'collection' AND o.resource_id = s.resource_id)`

// collectionTeardown runs in order: the event records first, while the documents they name
// are still there to be found.
var collectionTeardown = []string{
	`DELETE FROM outline_event e WHERE e.workspace_id = $1 AND (e.model_id = ANY ($2) OR EXISTS (
		SELECT 1 FROM outline_document d WHERE d.workspace_id = $1 AND d.id = e.model_id AND d.collection_id = ANY ($2)))`,
	`DELETE FROM outline_document WHERE workspace_id = $1 AND collection_id = ANY ($2)`,
	`DELETE FROM outline_collection WHERE workspace_id = $1 AND id = ANY ($2)`,
}

var workspaceTeardown = []string{
	`DELETE FROM outline_event WHERE workspace_id = $1`,
	`DELETE FROM outline_document WHERE workspace_id = $1`,
	`DELETE FROM outline_collection WHERE workspace_id = $1`,
}

// TeardownConnection implements outlinesync.Store.
func (s *Store) TeardownConnection(ctx context.Context, tx ports.Tx, workspaceID, connectionID int64) error {
	ptx, err := sqlkit.PgxTx(tx)
	if err != nil {
		return err
	}
	others, err := mirrorkit.OtherLiveConnection(ctx, ptx, outline.Provider, workspaceID, connectionID)
	if err != nil {
		return err
	}
	var collections []string
	if others {
		if err := ptx.QueryRow(ctx, tornDownCollections, workspaceID, connectionID).Scan(&collections); err != nil {
			return sqlkit.Interpret("read torn-down outline collections", err)
		}
	}
	// The changes of what goes: every Outline change when everything goes, else the
	// collections' own and their documents' (a document view names its collectionId).
	sel := ports.ChangeSelection{TypePrefix: "outline.", All: !others}
	resources := make([]change.TornDownResource, len(collections))
	for i, c := range collections {
		resources[i] = change.TornDownResource{Type: outline.ResourceCollection, ID: c}
		sel.Subjects = append(sel.Subjects, "outline:collection:"+c)
	}
	if len(collections) > 0 {
		sel.DataMembers = map[string][]string{"collectionId": collections}
	}
	sent, err := mirrorkit.Teardown(ctx, ptx, "tear down outline mirror", workspaceID, collections, collectionTeardown, !others, workspaceTeardown)
	if err != nil || !sent {
		return err
	}
	return s.feed.Teardown(ctx, tx, outline.Provider, workspaceID, connectionID, sel, resources, !others)
}
