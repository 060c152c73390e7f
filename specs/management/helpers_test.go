package management_test

import (
	"context"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/specs/support"
)

func itoa(id int64) string { return strconv.FormatInt(id, 10) }

// insertEvent stores an inbox row (workspace nil: an installation row) with one committed step,
// as admission and a handler would have.
func insertEvent(ctx context.Context, workspaceID *int64, connectionID int64, deliveryKey string) int64 {
	GinkgoHelper()
	var id int64
	Expect(pool.QueryRow(ctx, `
		INSERT INTO provider_event (workspace_id, connection_id, provider, event_type, delivery_key, scope_key, subject, payload)
		VALUES ($1, $2, 'GITLAB', 'Issue Hook', $3, 'scope', 'subject', '{}') RETURNING id`,
		workspaceID, connectionID, deliveryKey).Scan(&id)).To(Succeed())
	_, err := pool.Exec(ctx, `INSERT INTO provider_event_step (event_id, step_name) VALUES ($1, 'handle')`, id)
	Expect(err).NotTo(HaveOccurred())
	return id
}

func count(ctx context.Context, sql string, args ...any) int {
	GinkgoHelper()
	return support.Count(ctx, pool, sql, args...)
}
