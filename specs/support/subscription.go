package support

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
)

// VerifiedSubscription writes a VERIFIED subscription of the connection's workspace straight
// into the database, as the management API stores one whose access the provider vouched for:
// under the connection's lifecycle lock, with the config_version bump admission reads.
func VerifiedSubscription(ctx context.Context, pool *pgxpool.Pool, connectionID, workspaceID int64, provider, resourceType, resourceID, name string) {
	ginkgo.GinkgoHelper()
	gomega.Expect(pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// The connection's row lock is its lifecycle lock, as the management API takes it.
		if _, err := tx.Exec(ctx, `SELECT 1 FROM connection WHERE id = $1 FOR UPDATE`, connectionID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO connection_subscription (connection_id, workspace_id, provider, resource_type, resource_id,
			                                     name, access, access_checked_at)
			VALUES ($1, $2, $3, $4, $5, $6, 'VERIFIED', now())`,
			connectionID, workspaceID, provider, resourceType, resourceID, name); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE connection SET config_version = config_version + 1 WHERE id = $1`, connectionID)
		return err
	})).To(gomega.Succeed())
}
