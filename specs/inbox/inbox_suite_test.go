package inbox_test

import (
	"os"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/inboxstore"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// The suite's database: one per run of the package, emptied before every spec. Every spec gets
// a fresh clock, and store reads it as the "now" of its SQL, so a spec expires a lease or lets
// a singleton lease lapse by advancing clock instead of waiting.
var (
	db    *pgtest.Database
	pool  *pgxpool.Pool
	clock *support.Clock
	store *inboxstore.Store
)

func TestInbox(t *testing.T) {
	if os.Getenv(crashHelperEnv) != "" || os.Getenv(stackHelperEnv) != "" {
		t.Skip("running as the crash helper process")
	}
	support.RunSpecs(t, "Inbox engine")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	db = support.Database(ctx)
	pool = support.Pool(ctx, db, 16)
})

var _ = BeforeEach(func(ctx SpecContext) {
	// The specs that share millions of retained rows keep them (their BeforeAll empties the
	// database once and writes them).
	if !slices.Contains(CurrentSpecReport().Labels(), retainedRows) {
		Expect(pgtest.Truncate(ctx, pool)).To(Succeed())
	}
	clock = support.NewClock()
	store = storeOn(pool, clock)
})

// storeOn is an inbox store on p whose SQL reads c as "now"; a nil c is the database clock, as
// in production.
func storeOn(p *pgxpool.Pool, c *support.Clock) *inboxstore.Store {
	GinkgoHelper()
	cfg := inboxstore.Config{}
	if c != nil {
		cfg.Clock = c
	}
	st, err := inboxstore.New(p, cfg)
	Expect(err).NotTo(HaveOccurred())
	return st
}
