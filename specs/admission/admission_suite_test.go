package admission_test

import (
	"context"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/admissionstore"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
)

// The suite's database and three pools: pool is the receiving server's, admissionPool the
// admission store's own (prepared by admissionstore.Configure, as `hephaestus serve` opens
// it), and observer is "another connection" that checks what a response promised is already
// committed.
var (
	db            *pgtest.Database
	pool          *pgxpool.Pool
	admissionPool *pgxpool.Pool
	observer      *pgxpool.Pool
)

func TestAdmission(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	RegisterFailHandler(Fail)
	RunSpecs(t, "Webhook admission")
	goleak.VerifyNone(t, leaks,
		// Ginkgo's own interrupt watcher outlives RunSpecs.
		goleak.IgnoreTopFunction("github.com/onsi/ginkgo/v2/internal/interrupt_handler.(*InterruptHandler).registerForInterrupts.func2"))
}

var _ = BeforeSuite(func(ctx SpecContext) {
	gin.SetMode(gin.TestMode)
	var err error
	db, err = pgtest.NewDatabase(ctx)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx context.Context) { Expect(db.Drop(ctx)).To(Succeed()) })
	pool, err = db.Pool(ctx, 8)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(pool.Close)
	admissionPool, err = admissionstore.OpenPool(ctx, db.URL)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(admissionPool.Close)
	observer, err = db.Pool(ctx, 4)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(observer.Close)
})

var _ = BeforeEach(func(ctx SpecContext) {
	Expect(pgtest.Truncate(ctx, pool)).To(Succeed())
})
