package inbox_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"runtime/debug"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/inboxstore"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/application/dispatch"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// stackHelperEnv, when set, makes this test binary a server whose handler recurses without a
// guard (see TestStackOverflowHelperProcess); stackHelperOffsetEnv is how far its clock runs
// ahead of the wall clock, so it agrees with the spec's moved clock.
const (
	stackHelperEnv       = "HEPHAESTUS_STACK_HELPER_DATABASE_URL"
	stackHelperOffsetEnv = "HEPHAESTUS_STACK_HELPER_CLOCK_OFFSET"
)

// cyclicPayload names each item's parent; item 1 is its own grandparent, so a walk up the
// parents never ends.
const cyclicPayload = `{"parents":{"1":"2","2":"1"},"item":"1"}`

type parentsPayload struct {
	Parents map[string]string `json:"parents"`
	Item    string            `json:"item"`
}

// ancestors counts an item's ancestors the naive way: one call per level, stopping at an item
// without a parent. It recurses for good on a cycle.
func ancestors(parents map[string]string, item string) int {
	parent, ok := parents[item]
	if !ok {
		return 0
	}
	return 1 + ancestors(parents, parent)
}

// guardedAncestors is the same walk through the depth guard.
func guardedAncestors(ctx context.Context, parents map[string]string, item string) (int, error) {
	ctx, err := dispatch.Descend(ctx)
	if err != nil {
		return 0, err
	}
	parent, ok := parents[item]
	if !ok {
		return 0, nil
	}
	n, err := guardedAncestors(ctx, parents, parent)
	return n + 1, err
}

// TestStackOverflowHelperProcess is a server whose handler walks the payload's parents without
// a guard, so the cyclic payload overflows its goroutine's stack. Its stack limit is lowered from
// Go's 1 GB so it dies in milliseconds instead of after growing toward a gigabyte; the end is
// the same fatal error.
func TestStackOverflowHelperProcess(t *testing.T) {
	url := os.Getenv(stackHelperEnv)
	if url == "" {
		t.Skip("runs only as the stack overflow spec's helper process")
	}
	offset, err := time.ParseDuration(os.Getenv(stackHelperOffsetEnv))
	if err != nil {
		t.Fatal(err)
	}
	debug.SetMaxStack(16 << 20)
	ctx := context.Background()
	p, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	c := support.NewClock()
	c.Advance(offset)
	st, err := inboxstore.New(p, inboxstore.Config{Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	reg := consumer.NewRegistry()
	if err := reg.Register(github, "issues", ports.HandlerFunc(func(_ context.Context, d ports.Dispatch) error {
		var pl parentsPayload
		if err := json.Unmarshal(d.Payload, &pl); err != nil {
			return inbox.ParsingFailure(err)
		}
		_ = ancestors(pl.Parents, pl.Item)
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	cons, err := consumer.New(consumer.Config{
		Owner: "overflowing-server", Claimers: 1, LeaseDuration: crashLease, PollInterval: 50 * time.Millisecond,
	}, st, reg, consumer.NewSignal(), c, &recordingLogger{}, noopMetrics{})
	if err != nil {
		t.Fatal(err)
	}
	_ = cons.Run(ctx) // never returns: the stack overflow ends the process
}

var _ = Describe("Runaway recursion in a handler", func() {
	var ws int64

	BeforeEach(func(ctx SpecContext) {
		ws = newWorkspace(ctx, pool, "acme", "ACTIVE")
	})

	When("the recursion descends through the depth guard", func() {
		It("becomes an error that uses the unknown-failure budget, and the server goes on", func(ctx SpecContext) {
			cfg := specConfig(owner)
			cfg.PoisonMaxAttempts = 2
			srv := startServer(cfg, store, registry(func(ctx context.Context, d ports.Dispatch) error {
				var pl parentsPayload
				if err := json.Unmarshal(d.Payload, &pl); err != nil {
					return inbox.ParsingFailure(err)
				}
				_, err := guardedAncestors(ctx, pl.Parents, pl.Item)
				return err
			}))
			runaway := storeRow(ctx, pool, row{Workspace: ws, Repo: "a", Payload: cyclicPayload})
			Eventually(func() string { return stateOf(ctx, pool, runaway) }).WithTimeout(10 * time.Second).Should(Equal("DEAD"))
			r := readRow(ctx, pool, runaway)
			Expect(r.Attempt).To(Equal(2))
			Expect(r.UnknownFailures).To(Equal(2), "each attempt used the unknown-failure budget")
			Expect(r.ErrorClass).To(Equal("UNKNOWN:*inbox.RecursionLimitError"))
			Expect(srv.metrics.Count("retry", "github", "unknown")).To(Equal(1))

			// The same server handles the next delivery: nothing crashed.
			finite := storeRow(ctx, pool, row{Workspace: ws, Repo: "b", Payload: `{"parents":{"1":"2"},"item":"1"}`})
			Eventually(func() string { return stateOf(ctx, pool, finite) }).WithTimeout(10 * time.Second).Should(Equal("DONE"))
		})
	})

	When("the recursion overflows the goroutine's stack", func() {
		// Go cannot turn a stack overflow into an error: "fatal error: stack overflow" ends the
		// process, recover included. What the inbox guarantees instead is that each attempt
		// crashes one server at most (only the lease holder runs the handler), that the crashed
		// lease comes back through the reaper as an unknown failure, and that the row is DEAD
		// with LeaseExpired once the budget is used, so it cannot crash servers in turn forever.
		It("crashes one server per attempt and ends DEAD with LeaseExpired after the budget", func(ctx SpecContext) {
			runaway := storeRow(ctx, pool, row{Workspace: ws, Payload: cyclicPayload})
			policy, err := inbox.NewRetryPolicy(10*time.Millisecond, 40*time.Millisecond, 2)
			Expect(err).NotTo(HaveOccurred())
			var offset time.Duration

			for attempt := 1; attempt <= 2; attempt++ {
				cmd := exec.Command(os.Args[0], "-test.run=^TestStackOverflowHelperProcess$")
				cmd.Env = append(os.Environ(), stackHelperEnv+"="+db.URL, stackHelperOffsetEnv+"="+offset.String())
				session, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(func() { session.Kill().Wait(10 * time.Second) })
				Eventually(session).WithTimeout(60*time.Second).Should(gexec.Exit(2), "the fatal error's exit status")
				Expect(session.Err).To(gbytes.Say(`goroutine stack exceeds`))
				Expect(session.Err).To(gbytes.Say(`fatal error: stack overflow`))

				r := readRow(ctx, pool, runaway)
				Expect(r.State).To(Equal("LEASED"), "the crashed server held the lease")
				Expect(r.Attempt).To(Equal(attempt))

				// Another server's reaper, once the lease ran out.
				clock.Advance(crashLease)
				offset += crashLease
				reaped, err := store.Reap(ctx, policy, 10)
				Expect(err).NotTo(HaveOccurred())
				Expect(reaped).To(HaveLen(1))
				r = readRow(ctx, pool, runaway)
				Expect(r.UnknownFailures).To(Equal(attempt))
				if attempt == 1 {
					Expect(r.State).To(Equal("QUEUED"))
				}
			}
			r := readRow(ctx, pool, runaway)
			Expect(r.State).To(Equal("DEAD"))
			Expect(r.ErrorClass).To(Equal(inbox.LeaseExpiredClass))
		})
	})
})
