package managementstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ ports.AccessRecheckStore = (*Connections)(nil)

const (
	// dueAccessChecks pages the subscriptions a recheck pass still has to check, by keyset
	// (connection, type, id) so that one whose check failed transiently is not read again in
	// the same pass. REVOKED ones stay revoked until the workspace subscribes again; a
	// connection without a token has nothing to check with.
	dueAccessChecks = `
SELECT c.workspace_id, c.id, c.kind, s.resource_type, s.resource_id, s.access, s.access_checked_at,
       CASE WHEN c.kind = ANY ($8::text[]) THEN NULL
            WHEN c.kind = ANY ($7::text[]) THEN c.api_token_ciphertext ELSE c.secret_ciphertext END
FROM connection c
JOIN connection_subscription s ON s.connection_id = c.id AND s.workspace_id = c.workspace_id
WHERE c.kind = ANY ($1::text[]) AND c.state <> 'UNINSTALLED'
  AND (c.kind = ANY ($8::text[])
       OR CASE WHEN c.kind = ANY ($7::text[]) THEN c.api_token_ciphertext ELSE c.secret_ciphertext END IS NOT NULL)
  AND s.access <> 'REVOKED'
  AND (s.access_checked_at IS NULL OR s.access_checked_at < $2)
  AND (c.id, s.resource_type, s.resource_id) > ($3, $4, $5)
ORDER BY c.id, s.resource_type, s.resource_id
LIMIT $6`

	// recordAccess writes one verdict where the subscription is still the one checked (same
	// last check), and reports whether its access changed. The caller holds the connection's
	// lifecycle lock, which every writer of its subscriptions takes, so old is current.
	recordAccess = `
UPDATE connection_subscription s
SET access = $6, access_reason = nullif($7, ''), access_checked_at = $8
FROM (SELECT s0.access AS before FROM connection_subscription s0
      WHERE s0.connection_id = $1 AND s0.workspace_id = $2 AND s0.resource_type = $3 AND s0.resource_id = $4) AS old
WHERE s.connection_id = $1 AND s.workspace_id = $2 AND s.resource_type = $3 AND s.resource_id = $4
  AND s.access_checked_at IS NOT DISTINCT FROM $5
RETURNING old.before <> s.access`
)

// DueAccessChecks implements ports.AccessRecheckStore. The credential of a kind that accepts an
// API token (GITLAB, OUTLINE) is that token; of any other kind its secret (a PAT, a bot token).
func (s *Connections) DueAccessChecks(ctx context.Context, kinds, ownCredential []string, before time.Time, after ports.AccessCursor, limit int) ([]ports.AccessCheck, error) {
	var apiTokenKinds []string
	for name, k := range s.kinds {
		if k.AcceptsAPIToken() {
			apiTokenKinds = append(apiTokenKinds, name)
		}
	}
	rows, _ := s.pool.Query(ctx, dueAccessChecks, kinds, before, after.ConnectionID, after.ResourceType, after.ResourceID, limit, apiTokenKinds, ownCredential)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ports.AccessCheck, error) {
		var (
			c      ports.AccessCheck
			access string
		)
		if err := row.Scan(&c.WorkspaceID, &c.ConnectionID, &c.Kind, &c.Resource.Type, &c.Resource.ID,
			&access, &c.CheckedAt, &c.SealedSecret); err != nil {
			return c, err
		}
		var err error
		c.Access, err = connection.ParseAccess(access)
		return c, err
	})
	return out, sqlkit.Interpret("due access checks", err)
}

// RecordAccess implements ports.AccessRecheckStore. READ COMMITTED, like every lifecycle
// change: the connection's FOR UPDATE waits for the admissions holding it FOR SHARE, so a
// revocation commits either before an admission reads the route or after its insert.
func (s *Connections) RecordAccess(ctx context.Context, workspaceID, connectionID int64, verdicts []ports.AccessVerdict) (changed int, err error) {
	err = sqlkit.WithTx(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(ctx context.Context, tx pgx.Tx) error {
		changed = 0
		if _, err := s.lock(ctx, tx, workspaceID, connectionID); err != nil {
			return err
		}
		for _, v := range verdicts {
			var moved bool
			err := tx.QueryRow(ctx, recordAccess, connectionID, workspaceID, v.Check.Resource.Type, v.Check.Resource.ID,
				v.Check.CheckedAt, v.Access.String(), v.Reason, v.CheckedAt).Scan(&moved)
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				continue // removed or set again since it was read: its newer state stands
			case err != nil:
				return sqlkit.Interpret("record access", err)
			case moved:
				changed++
			}
		}
		if changed > 0 {
			if _, err := tx.Exec(ctx, bumpConfigVersion, workspaceID, connectionID); err != nil {
				return sqlkit.Interpret("bump config version", err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("record access of connection %d: %w", connectionID, err)
	}
	return changed, nil
}
