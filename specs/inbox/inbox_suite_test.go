package inbox_test

import (
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/inboxstore"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
	"github.com/hephaestus-dev/hephaestus/specs/support"
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
	support.RunSpecs(t, "Inbox engine")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	db = support.Database(ctx)
	pool = support.Pool(ctx, db, 16)
	var err error
	store, err = inboxstore.New(pool, inboxstore.Config{})
	Expect(err).NotTo(HaveOccurred())
})

var _ = BeforeEach(func(ctx SpecContext) {
	Expect(pgtest.Truncate(ctx, pool)).To(Succeed())
})
