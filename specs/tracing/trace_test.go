package tracing_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
)

// The SDK's in-memory exporter is given to the bootstrap exactly where the OTLP exporter goes
// (Config.SpanExporter): the same batching provider, the same global installation, the same
// shutdown at stop.
var _ = Describe("One trace per delivery", Ordered, func() {
	var (
		in       *instance
		exporter *tracetest.InMemoryExporter
		fake     *fakeGitLab
		spans    tracetest.SpanStubs
		key      = "7d1c2b90-0e4f-4c3e-9a51-000000000001"
		stored   row
		scopeKey string
	)

	BeforeAll(func(ctx SpecContext) {
		in = newInstance(ctx)
		exporter = tracetest.NewInMemoryExporter()
		kept := keptSpans{exporter}
		fake = newFakeGitLab(1) // the first approvals read fails: the delivery is retried once
		env := map[string]string{"HEPHAESTUS_GITLAB_API_URL": fake.URL + "/api/v4"}

		a := in.start("server-a", env, kept)
		t := in.tenant(ctx, a, "acme")
		a.deliver(ctx, t, key, mergeRequest(1))
		// Attempt 1 on server A: its approvals read fails (503), the retry is written and waits
		// (an hour: the retry delay of this instance).
		Eventually(fake.approvalReads).WithTimeout(30 * time.Second).Should(Equal(1))
		Eventually(func(ctx context.Context) (string, error) {
			r, err := in.row(ctx, key)
			return r.state, err
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond).Should(Equal("QUEUED"))
		a.Stop()

		// Hours later, on another server with its own pools: the retry is due now.
		_, err := in.pool.Exec(ctx, `UPDATE provider_event SET due_at = now() WHERE delivery_key = $1`, key)
		Expect(err).NotTo(HaveOccurred())
		b := in.start("server-b", env, kept)
		Eventually(func(ctx context.Context) (string, error) {
			r, err := in.row(ctx, key)
			return r.state, err
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond).Should(Equal("DONE"))
		b.Stop() // the stop exports what the batcher still holds
		Expect(fake.approvalReads()).To(Equal(2))

		stored, err = in.row(ctx, key)
		Expect(err).NotTo(HaveOccurred())
		Expect(in.pool.QueryRow(ctx, `SELECT scope_key FROM provider_event WHERE delivery_key = $1`, key).Scan(&scopeKey)).To(Succeed())
		spans = exporter.GetSpans()
	})

	named := func(name string) tracetest.SpanStubs { return spansNamed(spans, name) }
	attr := spanAttr
	// descendsFrom reports whether s is below ancestor in the trace.
	descendsFrom := func(s tracetest.SpanStub, ancestor trace.SpanID) bool {
		byID := map[trace.SpanID]tracetest.SpanStub{}
		for _, x := range spans {
			byID[x.SpanContext.SpanID()] = x
		}
		for p := s.Parent.SpanID(); p.IsValid(); {
			if p == ancestor {
				return true
			}
			parent, ok := byID[p]
			if !ok {
				return false
			}
			p = parent.Parent.SpanID()
		}
		return false
	}

	It("starts the trace at the webhook request, not at a traceparent the sender put in it", func() {
		requests := named("POST /webhooks/gitlab/:connectionId")
		Expect(requests).To(HaveLen(1))
		req := requests[0]
		Expect(req.Parent.IsValid()).To(BeFalse(), "the request span is a root")
		Expect(req.SpanContext.TraceID().String()).NotTo(Equal(senderTraceID))
		Expect(attr(req, "http.route").AsString()).To(Equal("/webhooks/gitlab/:connectionId"))
		Expect(attr(req, "http.response.status_code").AsInt64()).To(Equal(int64(202)))
		Expect(attr(req, telemetry.AttrProvider).AsString()).To(Equal("gitlab"))
		for _, s := range spans {
			Expect(s.SpanContext.TraceID().String()).NotTo(Equal(senderTraceID), s.Name)
		}
	})

	It("stores the request span's traceparent with the row", func() {
		req := named("POST /webhooks/gitlab/:connectionId")[0]
		Expect(stored.traceParent).NotTo(BeNil())
		Expect(*stored.traceParent).To(Equal(fmt.Sprintf("00-%s-%s-01",
			req.SpanContext.TraceID(), req.SpanContext.SpanID())))
	})

	It("records verification and the admission transaction inside the request span", func() {
		req := named("POST /webhooks/gitlab/:connectionId")[0]
		for _, name := range []string{"webhook.verify", "admission.transaction"} {
			got := named(name)
			Expect(got).To(HaveLen(1), name)
			Expect(got[0].Parent.SpanID()).To(Equal(req.SpanContext.SpanID()), name)
		}
		Expect(attr(named("admission.transaction")[0], "db.system.name").AsString()).To(Equal("postgresql"))
	})

	It("puts both attempts, on two servers, in the request's trace, each with its claim, steps, provider call and outcome write", func() {
		req := named("POST /webhooks/gitlab/:connectionId")[0]
		traceID := req.SpanContext.TraceID()
		attempts := named("inbox.attempt")
		Expect(attempts).To(HaveLen(2))
		servers := map[int64]string{}
		for _, at := range attempts {
			Expect(at.SpanContext.TraceID()).To(Equal(traceID))
			Expect(at.Parent.SpanID()).To(Equal(req.SpanContext.SpanID()), "a child of the stored context")
			Expect(at.Parent.IsRemote()).To(BeTrue(), "read back from the row")
			Expect(attr(at, telemetry.AttrDeliveryID).AsInt64()).To(Equal(stored.id))
			Expect(attr(at, telemetry.AttrEventType).AsString()).NotTo(BeEmpty())
			Expect(attr(at, telemetry.AttrScope).AsString()).To(Equal(telemetry.HashScope(scopeKey)))
			servers[attr(at, telemetry.AttrAttempt).AsInt64()] = attr(at, telemetry.AttrServer).AsString()

			children := func(name string) tracetest.SpanStubs {
				var out tracetest.SpanStubs
				for _, s := range named(name) {
					if descendsFrom(s, at.SpanContext.SpanID()) {
						out = append(out, s)
					}
				}
				return out
			}
			Expect(children("inbox.claim")).To(HaveLen(1))
			Expect(children("inbox.outcome_write")).To(HaveLen(1))
			Expect(children("inbox.step")).NotTo(BeEmpty(), "the handler's named steps")
			calls := children("GET /api/v4/projects/:id/merge_requests/:id/approvals")
			Expect(calls).To(HaveLen(1), "the provider call, its URL redacted")
			Expect(calls[0].SpanKind).To(Equal(trace.SpanKindClient))
			Expect(attr(calls[0], "url.full").AsString()).To(Equal(fake.URL + "/api/v4/projects/:id/merge_requests/:id/approvals"))
		}
		Expect(servers).To(HaveLen(2))
		Expect(servers).To(ContainElements("server-a", "server-b"))
		outcomes := map[string]string{}
		for _, at := range attempts {
			outcomes[attr(at, telemetry.AttrServer).AsString()] = attr(at, telemetry.AttrOutcome).AsString()
		}
		Expect(outcomes).To(Equal(map[string]string{"server-a": "retried", "server-b": "done"}))
	})

	It("records a sync job's page as a root span of its own, its provider calls inside it", func() {
		pages := named("sync.page")
		Expect(pages).NotTo(BeEmpty(), "the connection's backfill ran")
		for _, p := range pages {
			Expect(p.Parent.IsValid()).To(BeFalse())
			Expect(attr(p, telemetry.AttrProvider).AsString()).To(Equal("gitlab"))
		}
		calls := named("GET /api/v4/projects/:id/issues")
		Expect(calls).NotTo(BeEmpty())
		for _, c := range calls {
			Expect(slices.ContainsFunc(pages, func(p tracetest.SpanStub) bool { return descendsFrom(c, p.SpanContext.SpanID()) })).
				To(BeTrue(), "the page read is a child of its sync.page span")
		}
	})

	It("records the retention pass (run at each server's start by the lease holder) as a root span naming its server", func() {
		passes := named("inbox.retention")
		Expect(passes).NotTo(BeEmpty(), "the server holding the retention lease ran a pass at start")
		for _, p := range passes {
			Expect(p.Parent.IsValid()).To(BeFalse())
			Expect(attr(p, "hephaestus.server_id").AsString()).To(BeElementOf("server-a", "server-b"))
		}
	})

	It("records the time the row waited as an attribute of the attempt, not as a span", func() {
		for _, at := range named("inbox.attempt") {
			Expect(attr(at, telemetry.AttrWaited).Type()).To(Equal(attribute.FLOAT64))
		}
		for _, s := range spans {
			Expect(s.Name).NotTo(ContainSubstring("wait"))
		}
	})

	It("puts no payload value, token, login or raw scope in any span attribute or event", func() {
		forbidden := []string{hookToken, apiToken, authorName, authorUser, mrTitle, "acme/api", scopeKey,
			"Private-Token", strings.TrimPrefix(gitlabURL, "https://")}
		for _, s := range spans {
			noSecretIn(s, forbidden...)
		}
	})
})

// keptSpans is the in-memory exporter whose spans outlive a server's stop (the SDK's Shutdown of
// the in-memory exporter forgets them): the spec reads the spans of both servers at the end.
type keptSpans struct{ *tracetest.InMemoryExporter }

func (keptSpans) Shutdown(context.Context) error { return nil }
