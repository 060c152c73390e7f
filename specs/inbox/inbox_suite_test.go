package inbox_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/inboxstore"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/pgtest"
)

// The suite's database: one per run of the package, emptied before every spec.
var (
	db    *pgtest.Database
	pool  *pgxpool.Pool
	store *inboxstore.Store
)

func TestInbox(t *testing.T) {
	if os.Getenv(crashHelperEnv) != "" {
		t.Skip("running as the crash helper process")
	}
	// Goroutines alive before the specs (the test framework's) are not the suite's to end.
	before := goleak.IgnoreCurrent()
	RegisterFailHandler(Fail)
	RunSpecs(t, "Inbox engine")
	goleak.VerifyNone(t, before,
		// Ginkgo's own signal watcher, started by RunSpecs and left for the process.
		goleak.IgnoreTopFunction("github.com/onsi/ginkgo/v2/internal/interrupt_handler.(*InterruptHandler).registerForInterrupts.func2"))
}

var _ = BeforeSuite(func(ctx SpecContext) {
	var err error
	db, err = pgtest.NewDatabase(ctx)
	Expect(err).NotTo(HaveOccurred())
	pool, err = db.Pool(ctx, 16)
	Expect(err).NotTo(HaveOccurred())
	store, err = inboxstore.New(pool, inboxstore.Config{})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if pool != nil {
		pool.Close()
	}
	if db != nil {
		Expect(db.Drop(context.Background())).To(Succeed())
	}
})

var _ = BeforeEach(func(ctx SpecContext) {
	Expect(pgtest.Truncate(ctx, pool)).To(Succeed())
})
