package changes_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/inboxstore"
	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/application/changes"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// movedClock is a clock a spec sets.
type movedClock struct{ now time.Time }

func (c *movedClock) Now() time.Time { return c.now }

var _ = Describe("Change retention", func() {
	var (
		box     *deliveryinbox.Inbox
		feed    *changefeed.Store
		lease   *inboxstore.Store
		metrics *telemetry.Metrics
		clock   *movedClock
		acme    int64
		other   int64
	)

	retention := func(owner string) *changes.Retention {
		GinkgoHelper()
		r, err := changes.NewRetention(changes.RetentionConfig{Owner: owner, Keep: 7 * 24 * time.Hour, Batch: 2},
			feed, lease, metrics, clock, support.Logger{})
		Expect(err).NotTo(HaveOccurred())
		return r
	}

	BeforeEach(func(ctx SpecContext) {
		var err error
		box, feed = writer()
		lease, err = inboxstore.New(writerPool, inboxstore.Config{})
		Expect(err).NotTo(HaveOccurred())
		metrics = telemetry.NewMetrics()
		clock = &movedClock{now: time.Now().Add(8 * 24 * time.Hour)} // eight days on
		acme = support.Workspace(ctx, writerPool, "acme")
		other = support.Workspace(ctx, writerPool, "other")
	})

	When("changes are older than the retention", func() {
		It("deletes them on the server holding the lease, answers a cursor before them cursor-expired and keeps the rest readable", func(ctx SpecContext) {
			for _, s := range []string{"old-1", "old-2", "old-3"} {
				Expect(publish(ctx, box, feed, acme, s, nil)).To(Succeed())
			}
			Expect(publish(ctx, box, feed, other, "other-old", nil)).To(Succeed())
			page, err := feed.Changes(ctx, acme, change.Cursor{}, 100)
			Expect(err).NotTo(HaveOccurred())
			afterFirst := page[0].Cursor
			afterLast := page[2].Cursor
			// A change of today: eight days on, it is a day old and kept.
			Expect(publish(ctx, box, feed, acme, "new", nil)).To(Succeed())
			_, err = writerPool.Exec(ctx, `UPDATE workspace_change SET occurred_at = $1 WHERE subject = 'new'`, clock.now.Add(-24*time.Hour))
			Expect(err).NotTo(HaveOccurred())

			// Another server holds the lease: this one deletes nothing.
			Expect(lease.AcquireSingleton(ctx, changes.RetentionSingleton, "server-b", time.Hour)).To(BeTrue())
			n, err := retention("server-a").RunOnce(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(n).To(Equal(0))

			n, err = retention("server-b").RunOnce(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(n).To(Equal(4))
			Expect(testutilGauge(metrics, "integration_change_feed_rows")).To(Equal(1.0))

			fromStart, err := feed.Changes(ctx, acme, change.Cursor{}, 100)
			Expect(err).NotTo(HaveOccurred())
			Expect(subjects(fromStart)).To(Equal([]string{"new"}), "a consumer without a cursor starts at the oldest change kept")
			_, err = feed.Changes(ctx, acme, afterFirst, 100)
			Expect(err).To(MatchError(change.ErrCursorExpired))
			kept, err := feed.Changes(ctx, acme, afterLast, 100)
			Expect(err).NotTo(HaveOccurred())
			Expect(subjects(kept)).To(Equal([]string{"new"}))
		})

		It("answers 410 cursor-expired over HTTP", func(ctx SpecContext) {
			srv := newFeedServer(time.Hour, 8)
			svc, _ := support.Management(readerPool, adminToken)
			ws := support.NewWorkspace(ctx, svc, "third").ID
			token := support.NewAccount(ctx, svc, "tia", false, "third", "MEMBER").Token
			Expect(publish(ctx, box, feed, ws, "old", nil)).To(Succeed())
			Expect(publish(ctx, box, feed, ws, "old-2", nil)).To(Succeed())
			_, err := retention("server-a").RunOnce(ctx)
			Expect(err).NotTo(HaveOccurred())

			r := srv.get("/api/workspaces/third/changes?after=1-1", token)
			Expect(r.Status).To(Equal(410))
			Expect(r.JSON).To(Equal(map[string]any{"error": "cursor-expired"}))
		})
	})
})
