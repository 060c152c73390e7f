// Package support is the setup the behaviour specs share: the suite's own database on the test
// cluster (or one migrated from an older schema), the goroutine-leak check, the management
// service (with or without provider modules), an HTTP server for the API under test and one JSON
// caller of it, and inbox rows leased as a claim leaves them and dispatched as the consumer does.
//
// It asserts with Gomega and registers its cleanups with Ginkgo's DeferCleanup, so it is for
// specs only: called in BeforeSuite, what it opens is closed when the suite ends, in reverse
// order of opening (a pool before its database is dropped), after the suite's own AfterSuite.
package support

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"go.uber.org/goleak"

	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// RunSpecs runs the suite's specs, then fails t when a goroutine they started is still running
// (GUIDE.md: tests end with a goroutine-leak check).
func RunSpecs(t *testing.T, description string) {
	t.Helper()
	// Goroutines alive before the specs (the test framework's) are not the suite's to end.
	leaks := goleak.IgnoreCurrent()
	gomega.RegisterFailHandler(ginkgo.Fail)
	ginkgo.RunSpecs(t, description)
	goleak.VerifyNone(t, leaks,
		// Ginkgo's own signal watcher, started by RunSpecs and left for the process.
		goleak.IgnoreTopFunction("github.com/onsi/ginkgo/v2/internal/interrupt_handler.(*InterruptHandler).registerForInterrupts.func2"))
}

// SkipWithoutCluster skips the suite when no test cluster is configured (pgtest.ErrNoCluster),
// for suites that may run where `make test` did not start one; without it Database fails.
func SkipWithoutCluster() {
	if os.Getenv(pgtest.EnvAdminURL) == "" {
		ginkgo.Skip(pgtest.ErrNoCluster.Error())
	}
}

// Database creates the suite's own database on the test cluster, with the migrations applied,
// and drops it when the suite ends.
func Database(ctx context.Context) *pgtest.Database {
	ginkgo.GinkgoHelper()
	db, err := pgtest.NewDatabase(ctx)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ginkgo.DeferCleanup(func(ctx context.Context) {
		// Dropped even when the suite was interrupted, so no database outlives its run.
		gomega.Expect(db.Drop(context.WithoutCancel(ctx))).To(gomega.Succeed())
	})
	return db
}

// Pool opens a pool of at most maxConns connections on db (each "server" of a spec opens its
// own) and closes it when the suite ends, before db is dropped.
func Pool(ctx context.Context, db *pgtest.Database, maxConns int32) *pgxpool.Pool {
	ginkgo.GinkgoHelper()
	pool, err := db.Pool(ctx, maxConns)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ginkgo.DeferCleanup(pool.Close)
	return pool
}

// Logger writes what the code under test logs next to the failing spec.
type Logger struct{}

var _ ports.Logger = Logger{}

func (Logger) Debugw(msg string, kv ...any) { fmt.Fprintln(ginkgo.GinkgoWriter, "DEBUG", msg, kv) }
func (Logger) Infow(msg string, kv ...any)  { fmt.Fprintln(ginkgo.GinkgoWriter, "INFO", msg, kv) }
func (Logger) Warnw(msg string, kv ...any)  { fmt.Fprintln(ginkgo.GinkgoWriter, "WARN", msg, kv) }
func (Logger) Errorw(msg string, kv ...any) { fmt.Fprintln(ginkgo.GinkgoWriter, "ERROR", msg, kv) }

// Must is v, and panics on err: for constructors at package level of a spec, where a failure is
// a broken spec, not a behaviour.
func Must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
