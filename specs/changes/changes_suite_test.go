package changes_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/pgtest"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

func TestChanges(t *testing.T) {
	support.RunSpecs(t, "Change feed Suite")
}

var (
	// writerPool is the writing servers' pool, readerPool the reading server's.
	writerPool *pgxpool.Pool
	readerPool *pgxpool.Pool
	db         *pgtest.Database
)

var _ = BeforeSuite(func(ctx SpecContext) {
	support.SkipWithoutCluster()
	db = support.Database(ctx)
	writerPool = support.Pool(ctx, db, 24)
	readerPool = support.Pool(ctx, db, 4)
})

var _ = BeforeEach(func(ctx SpecContext) {
	Expect(pgtest.Truncate(ctx, writerPool)).To(Succeed())
})

// publish writes one change of type t in its own transaction of the inbox (outside dispatch,
// as a sync job writes), running during(tx) after the publication and before the commit.
func publish(ctx context.Context, box *deliveryinbox.Inbox, feed *changefeed.Store, ws int64, subject string,
	during func(ctx context.Context, tx ports.Tx) error,
) error {
	c, err := change.New(change.MustType("spec.item.written"), subject, map[string]string{"subject": subject})
	if err != nil {
		return err
	}
	return box.Write(ctx, func(ctx context.Context, tx ports.Tx) error {
		if err := feed.Publish(ctx, tx, ws, c); err != nil {
			return err
		}
		if during != nil {
			return during(ctx, tx)
		}
		return nil
	})
}

func subjects(cs []change.Stored) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Subject)
	}
	return out
}

// published lists the changes stored for ws, in publication order, read from the table: what
// the writers published, whether or not the feed hands it out yet (another suite's open
// transaction in the same cluster holds the feed's watermark back).
func published(ctx context.Context, ws int64) []change.Stored {
	GinkgoHelper()
	rows, err := readerPool.Query(ctx, `
		SELECT id, type, subject, data FROM workspace_change WHERE workspace_id = $1 ORDER BY xid, id`, ws)
	Expect(err).NotTo(HaveOccurred())
	defer rows.Close()
	var out []change.Stored
	for rows.Next() {
		var c change.Stored
		Expect(rows.Scan(&c.ID, &c.Type, &c.Subject, &c.Data)).To(Succeed())
		out = append(out, c)
	}
	Expect(rows.Err()).NotTo(HaveOccurred())
	return out
}

// settled reads the whole feed of ws once it hands out n changes: the feed delays a change
// while any older transaction of the cluster is open, it never skips one.
func settled(ctx context.Context, feed *changefeed.Store, ws int64, n int) []change.Stored {
	GinkgoHelper()
	var all []change.Stored
	Eventually(func(g Gomega) {
		page, err := feed.Changes(ctx, ws, change.Cursor{}, 100)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(page).To(HaveLen(n))
		all = page
	}).WithTimeout(time.Minute).WithPolling(50 * time.Millisecond).Should(Succeed())
	return all
}
