package mirrorkit

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
)

// otherLiveConnection: the workspace ($1) keeps a live connection of the provider ($3) besides
// $2.
const otherLiveConnection = `
SELECT EXISTS (SELECT 1 FROM connection WHERE workspace_id = $1 AND id <> $2 AND provider = $3
	AND state <> 'UNINSTALLED')`

// OtherLiveConnection reports whether workspace ws keeps a live connection of p besides conn,
// the one being torn down: while one lives, only what conn alone brought goes.
func OtherLiveConnection(ctx context.Context, ptx pgx.Tx, p provider.Provider, ws, conn int64) (bool, error) {
	var others bool
	err := ptx.QueryRow(ctx, otherLiveConnection, ws, conn, p.String()).Scan(&others)
	return others, sqlkit.Interpret("read live "+strings.ToLower(p.String())+" connections", err)
}

// Teardown deletes in ptx, in one round trip: with $1 the workspace and $2 ids, each statement
// of scoped when ids is not empty (the torn-down resources' rows), then, when everything goes,
// each statement of workspace with $1 alone. sent is false when there was nothing to delete.
func Teardown[ID any](ctx context.Context, ptx pgx.Tx, op string, ws int64, ids []ID, scoped []string,
	everything bool, workspace []string) (sent bool, err error) {
	b := &pgx.Batch{}
	if len(ids) > 0 {
		for _, q := range scoped {
			b.Queue(q, ws, ids)
		}
	}
	if everything {
		for _, q := range workspace {
			b.Queue(q, ws)
		}
	}
	if b.Len() == 0 {
		return false, nil
	}
	return true, sqlkit.Interpret(op, ptx.SendBatch(ctx, b).Close())
}
