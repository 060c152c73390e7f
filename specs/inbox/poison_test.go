package inbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ = Describe("Poison handling", func() {
	var ws int64

	BeforeEach(func(ctx SpecContext) {
		ws = newWorkspace(ctx, pool, "acme", "ACTIVE")
	})

	// ends waits until the row is DONE or DEAD and returns it.
	ends := func(ctx context.Context, id int64) stored {
		var r stored
		Eventually(func(g Gomega) {
			r = readRow(ctx, pool, id)
			g.Expect(r.State).To(BeElementOf("DONE", "DEAD"))
		}).WithTimeout(10 * time.Second).WithPolling(20 * time.Millisecond).Should(Succeed())
		return r
	}

	It("classifies through wrapped causes: a parsing error deep in the chain is DEAD at once", func(ctx SpecContext) {
		var calls atomic.Int32
		var syntax *json.SyntaxError
		srv := startServer(specConfig(owner), store, registry(func(_ context.Context, d ports.Dispatch) error {
			calls.Add(1)
			err := json.Unmarshal([]byte("{"), new(map[string]any))
			Expect(errors.As(err, &syntax)).To(BeTrue())
			return fmt.Errorf("handle issue: %w", fmt.Errorf("decode: %w", inbox.ParsingFailure(err)))
		}))
		id := storeRow(ctx, pool, row{Workspace: ws})

		r := ends(ctx, id)
		Expect(r.State).To(Equal("DEAD"))
		Expect(r.Attempt).To(Equal(1))
		Expect(r.ErrorClass).To(Equal("PERMANENT:*json.SyntaxError"))
		Expect(calls.Load()).To(Equal(int32(1)))
		Eventually(func() int { return srv.metrics.Count("handled", "github", "dead") }).Should(Equal(1))
	})

	It("does not use the budget for transient failures", func(ctx SpecContext) {
		cfg := specConfig(owner)
		cfg.PoisonMaxAttempts = 2
		var calls atomic.Int32
		srv := startServer(cfg, store, registry(func(context.Context, ports.Dispatch) error {
			if calls.Add(1) <= 4 {
				return fmt.Errorf("fetch: %w", &inbox.ProviderError{Provider: "github", Op: "GET /x", Kind: inbox.ProviderServerError, Status: 503})
			}
			return nil
		}))
		id := storeRow(ctx, pool, row{Workspace: ws})

		r := ends(ctx, id)
		Expect(r.State).To(Equal("DONE"))
		Expect(r.Attempt).To(Equal(5))
		Expect(r.UnknownFailures).To(BeZero())
		Eventually(func() int { return srv.metrics.Count("retry", "github", inbox.CauseProviderTransport.String()) }).Should(Equal(4))
	})

	It("ends the unknown-failure budget in DEAD", func(ctx SpecContext) {
		cfg := specConfig(owner)
		cfg.PoisonMaxAttempts = 3
		var calls atomic.Int32
		srv := startServer(cfg, store, registry(func(context.Context, ports.Dispatch) error {
			calls.Add(1)
			return errors.New("boom")
		}))
		id := storeRow(ctx, pool, row{Workspace: ws})

		r := ends(ctx, id)
		Expect(r.State).To(Equal("DEAD"))
		Expect(r.UnknownFailures).To(Equal(3))
		Expect(r.Attempt).To(Equal(3))
		Expect(r.ErrorClass).To(Equal("UNKNOWN:*errors.errorString"))
		Expect(calls.Load()).To(Equal(int32(3)))
		Eventually(func() int { return srv.metrics.Count("retry", "github", "unknown") }).Should(Equal(2))
		Eventually(func() int { return srv.metrics.Count("handled", "github", "dead") }).Should(Equal(1))
	})

	It("catches a panic and counts it against the budget", func(ctx SpecContext) {
		var calls atomic.Int32
		srv := startServer(specConfig(owner), store, registry(func(context.Context, ports.Dispatch) error {
			if calls.Add(1) == 1 {
				explode("token=ghp_panicsecret")
			}
			return nil
		}))
		id := storeRow(ctx, pool, row{Workspace: ws})

		r := ends(ctx, id)
		Expect(r.State).To(Equal("DONE"))
		Expect(r.UnknownFailures).To(Equal(1), "the panic used the budget")
		Expect(r.Attempt).To(Equal(2))
		Eventually(func() int { return srv.metrics.Count("retry", "github", inbox.CausePanic.String()) }).Should(Equal(1))

		first := srv.log.Find("first attempt")
		Expect(first).To(HaveLen(1))
		Expect(first[0].Value("causeTypes")).To(Equal([]string{"*inbox.PanicError"}))
		frames, ok := first[0].Value("frames").([]string)
		Expect(ok).To(BeTrue())
		Expect(frames).NotTo(BeEmpty())
		Expect(frames[0]).To(HaveSuffix("inbox_test.explode"), "innermost frame first, function names only")
		for _, f := range frames {
			Expect(f).NotTo(ContainSubstring(".go:"))
		}
		Expect(srv.log.Text()).NotTo(ContainSubstring("ghp_panicsecret"))
	})

	It("makes a panicking row DEAD once the budget is used, naming the panic's type", func(ctx SpecContext) {
		cfg := specConfig(owner)
		cfg.PoisonMaxAttempts = 1
		startServer(cfg, store, registry(func(context.Context, ports.Dispatch) error {
			explode("never stored")
			return nil
		}))
		id := storeRow(ctx, pool, row{Workspace: ws})
		r := ends(ctx, id)
		Expect(r.State).To(Equal("DEAD"))
		Expect(r.ErrorClass).To(Equal("UNKNOWN:panic(string)"))
	})

	It("stores no message in a DEAD row and logs none", func(ctx SpecContext) {
		cfg := specConfig(owner)
		cfg.PoisonMaxAttempts = 1
		const secret = "https://x-access-token:ghp_secret123@github.com"
		srv := startServer(cfg, store, registry(func(context.Context, ports.Dispatch) error {
			return fmt.Errorf("clone %s: %w", secret, errors.New("denied "+secret))
		}))
		id := storeRow(ctx, pool, row{Workspace: ws, Payload: `{"kept":true}`})

		r := ends(ctx, id)
		Expect(r.State).To(Equal("DEAD"))
		Expect(r.Payload).To(MatchJSON(`{"kept":true}`))
		var all string
		Expect(pool.QueryRow(ctx, `SELECT row_to_json(e)::text FROM provider_event e WHERE id = $1`, id).Scan(&all)).To(Succeed())
		Expect(all).NotTo(ContainSubstring("ghp_secret123"))
		Expect(all).NotTo(ContainSubstring("denied"))

		Eventually(func() []logEntry { return srv.log.Find("delivery dead") }).Should(HaveLen(1))
		dead := srv.log.Find("delivery dead")[0]
		Expect(dead.Value("causeTypes")).To(Equal([]string{"*fmt.wrapError", "*errors.errorString"}))
		Expect(dead.Value("errorClass")).To(Equal("UNKNOWN:*errors.errorString"))
		Expect(srv.log.Text()).NotTo(ContainSubstring("ghp_secret123"))
	})

	When("a required row is busy (contention)", func() {
		It("retries at once in the same order, gives the attempt back and logs at DEBUG", func(ctx SpecContext) {
			cfg := specConfig(owner)
			cfg.PoisonMaxAttempts = 1
			cfg.RetryBaseDelay = time.Hour // a counted retry would not come back during the spec
			cfg.RetryMaxDelay = time.Hour
			seen := &idList{}
			var calls atomic.Int32
			srv := startServer(cfg, store, registry(func(_ context.Context, d ports.Dispatch) error {
				if calls.Add(1) <= 3 {
					return fmt.Errorf("step: %w", inbox.ErrBusy)
				}
				seen.add(d.Delivery.ID())
				return nil
			}))
			first := storeRow(ctx, pool, row{Workspace: ws})
			second := storeRow(ctx, pool, row{Workspace: ws})

			Eventually(func() string { return stateOf(ctx, pool, second) }).WithTimeout(10 * time.Second).Should(Equal("DONE"))
			r := readRow(ctx, pool, first)
			Expect(r.State).To(Equal("DONE"))
			Expect(r.Attempt).To(Equal(1))
			Expect(r.UnknownFailures).To(BeZero())
			Expect(seen.get()).To(Equal([]int64{first, second}))
			Eventually(func() int { return srv.metrics.Count("retry", "github", "contention") }).Should(Equal(3))
			Expect(srv.metrics.Count("handled", "github", "retried")).To(Equal(3))
			busy := srv.log.Find("busy")
			Expect(busy).To(HaveLen(3))
			for _, e := range busy {
				Expect(e.Level).To(Equal("debug"))
			}
		})
	})

	When("the handler's row was erased during processing", func() {
		It("drops the work and writes nothing", func(ctx SpecContext) {
			srv := startServer(specConfig(owner), store, registry(func(ctx context.Context, d ports.Dispatch) error {
				_, err := pool.Exec(ctx, `DELETE FROM provider_event WHERE id = $1`, d.Delivery.ID())
				Expect(err).NotTo(HaveOccurred())
				return fmt.Errorf("write step: %w", inbox.ErrErased)
			}))
			id := storeRow(ctx, pool, row{Workspace: ws})
			Eventually(func() int {
				return srv.metrics.Count("dropped", "github", "erased-during-processing")
			}).WithTimeout(5 * time.Second).Should(Equal(1))
			Expect(srv.metrics.Count("handled", "github", "dropped")).To(Equal(1))
			Expect(stateOf(ctx, pool, id)).To(Equal("missing"))
		})
	})
})

// explode panics with a value that must never reach a log or a row.
func explode(value string) { panic(value) }
