package inbox_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/inboxstore"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// crashHelperEnv, when set, makes this test binary a killable server (see TestCrashHelperProcess).
const crashHelperEnv = "HEPHAESTUS_CRASH_HELPER_DATABASE_URL"

const crashingServer = "crashing-server"

// crashLease is the helper's lease: long, so a slow machine never loses it before the kill; the
// survivor's clock moves past it instead of waiting for it.
const crashLease = 2 * time.Minute

// TestCrashHelperProcess is the server the crash spec kills: the spec runs this test binary
// again with -test.run=^TestCrashHelperProcess$ and the database URL in crashHelperEnv. Its
// consumer leases with crashLease from the database clock and a handler that never returns; it
// announces each row it starts on stdout.
func TestCrashHelperProcess(t *testing.T) {
	url := os.Getenv(crashHelperEnv)
	if url == "" {
		t.Skip("runs only as the crash spec's helper process")
	}
	ctx := context.Background()
	p, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	st, err := inboxstore.New(p, inboxstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	reg := consumer.NewRegistry()
	if err := reg.Register(github, "issues", ports.HandlerFunc(func(_ context.Context, d ports.Dispatch) error {
		fmt.Printf("handling %d\n", d.Delivery.ID())
		select {} // a handler stuck for good: only SIGKILL ends it
	})); err != nil {
		t.Fatal(err)
	}
	c, err := consumer.New(consumer.Config{
		Owner: crashingServer, Claimers: 1, LeaseDuration: crashLease, PollInterval: 50 * time.Millisecond,
	}, st, reg, consumer.NewSignal(), systemClock{}, &recordingLogger{}, noopMetrics{})
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Run(ctx) // never returns: the spec kills the process
}

var _ = Describe("Crash", func() {
	When("a server is killed with SIGKILL in the middle of a handler", func() {
		It("lets another server finish its rows once the lease expired, losing none and keeping each scope's order", func(ctx SpecContext) {
			ws := newWorkspace(ctx, pool, "acme", "ACTIVE")
			a1 := storeRow(ctx, pool, row{Workspace: ws, Repo: "a"})
			b1 := storeRow(ctx, pool, row{Workspace: ws, Repo: "b"})
			storeRow(ctx, pool, row{Workspace: ws, Repo: "a"})
			storeRow(ctx, pool, row{Workspace: ws, Repo: "b"})
			storeRow(ctx, pool, row{Workspace: ws, Repo: "a"})

			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelperProcess$")
			cmd.Env = append(os.Environ(), crashHelperEnv+"="+db.URL)
			session, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func() { session.Kill().Wait(10 * time.Second) })

			// The helper's one worker is inside a1's or b1's handler; the other row waits for it.
			Eventually(session.Out).WithTimeout(30 * time.Second).Should(gbytes.Say(`handling (\d+)`))
			Expect(countRows(ctx, pool, "state = 'LEASED' AND leased_by = $1", crashingServer)).To(Equal(2))
			session.Kill()
			Eventually(session).WithTimeout(10 * time.Second).Should(gexec.Exit())

			// The survivor's clock is past the crashed server's leases, as if it had waited them out.
			clock.Advance(crashLease)
			log := newScopeLog()
			cfg := specConfig("survivor")
			cfg.ReaperInterval = 100 * time.Millisecond
			startServer(cfg, store, registry(func(_ context.Context, d ports.Dispatch) error {
				log.enter(d)
				log.exit(d, true)
				return nil
			}))
			Eventually(func() int { return countRows(ctx, pool, "state = 'DONE'") }).
				WithTimeout(20 * time.Second).Should(Equal(5))
			expectScopeOrder(ctx, pool, log)
			for _, id := range []int64{a1, b1} {
				r := readRow(ctx, pool, id)
				Expect(r.Attempt).To(Equal(2), "row %d: the crashed lease and the survivor's", id)
				Expect(r.UnknownFailures).To(Equal(1), "row %d: the expiry used the budget once", id)
			}
		})
	})
})
