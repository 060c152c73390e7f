package changes_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

var _ = Describe("Following the change feed", func() {
	var (
		box  *deliveryinbox.Inbox
		feed *changefeed.Store
		read *changefeed.Store
		ws   int64
	)

	BeforeEach(func(ctx SpecContext) {
		box, feed, read = writerAndReader()
		ws = support.Workspace(ctx, writerPool, "acme")
	})

	When("a transaction that published first commits after a later one", func() {
		It("hands out neither until the earlier one commits, then both in publication order", func(ctx SpecContext) {
			commitSlow := slowThenFast(ctx, box, feed, ws)

			// "fast" is committed and visible to a plain SELECT, but "slow" is still in flight
			// with an older transaction id: the feed hands out nothing yet.
			Expect(support.Count(ctx, readerPool, `SELECT count(*) FROM workspace_change WHERE subject = 'fast'`)).To(Equal(1))
			page, err := read.Changes(ctx, ws, change.Cursor{}, 100)
			Expect(err).NotTo(HaveOccurred())
			Expect(page).To(BeEmpty())

			commitSlow()
			page, err = read.Changes(ctx, ws, change.Cursor{}, 100)
			Expect(err).NotTo(HaveOccurred())
			Expect(subjects(page)).To(Equal([]string{"slow", "fast"}))
		})
	})

	When("a write transaction of another database of the cluster stays open", func() {
		It("still hands out this database's committed changes: only this database's transactions hold the feed back", func(ctx SpecContext) {
			// The admin URL names the cluster's maintenance database, not this suite's.
			other, err := pgx.Connect(ctx, os.Getenv(pgtest.EnvAdminURL))
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func(ctx SpecContext) { _ = other.Close(ctx) })
			otherTx, err := other.Begin(ctx)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func(ctx SpecContext) { _ = otherTx.Rollback(ctx) })
			var otherXid string
			Expect(otherTx.QueryRow(ctx, `SELECT pg_current_xact_id()::text`).Scan(&otherXid)).To(Succeed())

			Expect(publish(ctx, box, feed, ws, "after-the-other", nil)).To(Succeed())

			// The other database's transaction is older than the change and still in flight:
			// the cluster-wide xmin is at or below it.
			Expect(support.Count(ctx, readerPool, `SELECT count(*) FROM workspace_change
				WHERE subject = 'after-the-other' AND xid > pg_snapshot_xmin(pg_current_snapshot())`)).To(Equal(1))
			page, err := read.Changes(ctx, ws, change.Cursor{}, 100)
			Expect(err).NotTo(HaveOccurred())
			Expect(subjects(page)).To(Equal([]string{"after-the-other"}))
		})
	})

	When("transaction ids differ in their number of digits", func() {
		It("orders by the transaction id's number, not its text", func(ctx SpecContext) {
			_, err := writerPool.Exec(ctx, `
				INSERT INTO workspace_change (workspace_id, xid, type, subject, data)
				VALUES ($1, '10', 'spec.item.written', 'ten', '{}'), ($1, '9', 'spec.item.written', 'nine', '{}')`, ws)
			Expect(err).NotTo(HaveOccurred())
			page, err := read.Changes(ctx, ws, change.Cursor{}, 100)
			Expect(err).NotTo(HaveOccurred())
			Expect(subjects(page)).To(Equal([]string{"nine", "ten"}))
			next, err := read.Changes(ctx, ws, page[0].Cursor, 100)
			Expect(err).NotTo(HaveOccurred())
			Expect(subjects(next)).To(Equal([]string{"ten"}))
		})
	})

	When("many writers commit in random order with random delays while a reader follows the cursor", func() {
		It("shows the reader every change exactly once, none skipped, in cursor order", func(ctx SpecContext) {
			const writers, each = 16, 25
			total := writers * each
			var wg sync.WaitGroup
			errs := make(chan error, writers)
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(w), 7))
					for i := range each {
						// A random delay inside the transaction, after the publication: the
						// transaction holds its xid while later ones commit around it.
						delay := float64(rng.IntN(20)) / 1000
						err := publish(ctx, box, feed, ws, fmt.Sprintf("w%02d-%03d", w, i), func(ctx context.Context, tx ports.Tx) error {
							ptx, err := sqlkit.PgxTx(tx)
							if err != nil {
								return err
							}
							_, err = ptx.Exec(ctx, `SELECT pg_sleep($1)`, delay)
							return err
						})
						if err != nil {
							errs <- err
							return
						}
					}
				}()
			}

			// The reader follows next with a small page, the whole time the writers run.
			var (
				seen   []change.Stored
				cursor change.Cursor
			)
			done := make(chan struct{})
			go func() {
				wg.Wait()
				close(done)
			}()
			deadline := time.Now().Add(2 * time.Minute)
			for finished := false; time.Now().Before(deadline); {
				select {
				case <-done:
					finished = true
				default:
				}
				page, err := read.Changes(ctx, ws, cursor, 7)
				Expect(err).NotTo(HaveOccurred())
				for _, c := range page {
					Expect(cursor.Before(c.Cursor)).To(BeTrue(), "cursor order: %s after %s", c.Cursor, cursor)
					cursor = c.Cursor
				}
				seen = append(seen, page...)
				if finished && len(page) == 0 {
					break
				}
			}
			Eventually(done).WithTimeout(time.Minute).Should(BeClosed())
			close(errs)
			for err := range errs {
				Expect(err).NotTo(HaveOccurred())
			}

			Expect(len(seen)).To(Equal(total))
			once := map[string]int{}
			for _, c := range seen {
				once[c.Subject]++
			}
			Expect(once).To(HaveLen(total), "every change exactly once")
			// Nothing was skipped: the reader's sequence is the whole feed as a reader starting
			// after the writers finished sees it.
			var all []change.Stored
			for c := (change.Cursor{}); ; {
				page, err := read.Changes(ctx, ws, c, 100)
				Expect(err).NotTo(HaveOccurred())
				if len(page) == 0 {
					break
				}
				all = append(all, page...)
				c = page[len(page)-1].Cursor
			}
			Expect(subjects(seen)).To(Equal(subjects(all)))
			// And the feed's order puts the changes of one writer in the order it committed them
			// (each writer's transactions follow one another).
			last := map[string]string{}
			for _, s := range subjects(seen) {
				w := s[:3]
				Expect(s > last[w]).To(BeTrue(), "%s after %s", s, last[w])
				last[w] = s
			}
		})
	})
})
