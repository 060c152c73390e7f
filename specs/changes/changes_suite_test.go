package changes_test

import (
	"context"
	"encoding/json"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
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

// versionMember is a change's version member as PostgreSQL prints jsonb (the feed's data).
var versionMember = regexp.MustCompile(`"version": "[^"]*"(, )?|, "version": "[^"]*"`)

// entity is a change's data without its version (versions_test.go checks the version): the
// entity as the read API shows it, printed as the feed stores it. Data a teardown or an
// erasure replaced ({"removed": true}, {"erased": true}) has no version.
func entity(data json.RawMessage) json.RawMessage {
	GinkgoHelper()
	if s := string(data); s != `{"removed": true}` && s != `{"erased": true}` {
		Expect(s).To(ContainSubstring(`"version": "`), "every change carries its entity's version")
	}
	return json.RawMessage(versionMember.ReplaceAllString(string(data), ""))
}

// writer is the inbox and the change feed of the writing servers, on their pool: what a
// handler's step publishes through.
func writer() (*deliveryinbox.Inbox, *changefeed.Store) {
	GinkgoHelper()
	box, err := deliveryinbox.New(writerPool)
	Expect(err).NotTo(HaveOccurred())
	feed, err := changefeed.New(writerPool, nil)
	Expect(err).NotTo(HaveOccurred())
	return box, feed
}

// writerAndReader is writer, and the change feed as the reading server reads it, on its own pool.
func writerAndReader() (box *deliveryinbox.Inbox, feed, read *changefeed.Store) {
	GinkgoHelper()
	box, feed = writer()
	read, err := changefeed.New(readerPool, nil)
	Expect(err).NotTo(HaveOccurred())
	return box, feed, read
}

// slowThenFast publishes "slow" in a transaction that stays open, then "fast", which commits
// while slow is still in flight with the older transaction id. commitSlow lets slow commit and
// waits until it did (a failing spec's cleanup lets it commit too).
func slowThenFast(ctx context.Context, box *deliveryinbox.Inbox, feed *changefeed.Store, ws int64) (commitSlow func()) {
	GinkgoHelper()
	started, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	let := func() { releaseOnce.Do(func() { close(release) }) }
	DeferCleanup(let) // a failing spec must not leave the slow transaction open
	slow := make(chan error, 1)
	go func() {
		slow <- publish(ctx, box, feed, ws, "slow", func(context.Context, ports.Tx) error {
			close(started)
			<-release
			return nil
		})
	}()
	Eventually(started).WithTimeout(10 * time.Second).Should(BeClosed())
	Expect(publish(ctx, box, feed, ws, "fast", nil)).To(Succeed())
	return func() {
		GinkgoHelper()
		let()
		Eventually(slow).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
	}
}
