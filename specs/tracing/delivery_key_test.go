package tracing_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/bootstrap"
)

// An operator starts from what the provider shows: its delivery id. Three deliveries are sent
// at once, so their requests overlap in admission; each must be a trace of its own, found by
// that id, holding every attempt of its row.
var _ = Describe("Traces found by the provider's delivery id", Ordered, func() {
	const (
		doneKey    = "3c9e1f00-5b7a-4f0e-8a11-00000000d0e1"
		retriedKey = "3c9e1f00-5b7a-4f0e-8a11-00000000e7e2"
		deadKey    = "3c9e1f00-5b7a-4f0e-8a11-00000000dea3"
	)
	var (
		in     *instance
		fake   *scriptedGitLab
		logs   *observer.ObservedLogs
		spans  tracetest.SpanStubs
		rows   map[string]row
		detail map[string]any
	)

	BeforeAll(func(ctx SpecContext) {
		in = newInstance(ctx)
		var core zapcore.Core
		core, logs = observer.New(zapcore.DebugLevel)
		in.logger = zap.New(core)
		exporter := tracetest.NewInMemoryExporter()
		// Merge request 1 is approved at once; 2's first read fails with a 503 (transient: a
		// retry, not counted); 3 is refused with a 422 (counted) until the spec heals it.
		fake = newScriptedGitLab(map[int]int{2: http.StatusServiceUnavailable}, map[int]int{3: http.StatusUnprocessableEntity})
		s := in.start("server-k", map[string]string{
			"HEPHAESTUS_GITLAB_API_URL":    fake.URL + "/api/v4",
			bootstrap.EnvPoisonBaseDelay:   "50ms",
			bootstrap.EnvPoisonMaxDelay:    "100ms",
			bootstrap.EnvPoisonMaxAttempts: "3",
			bootstrap.EnvTraceURL:          "https://tempo.example.com/trace/{traceId}",
		}, keptSpans{exporter})
		t := in.tenant(ctx, s, "acme")

		var wg sync.WaitGroup
		for iid, key := range map[int]string{1: doneKey, 2: retriedKey, 3: deadKey} {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				s.deliver(ctx, t, key, mergeRequest(iid))
			}()
		}
		wg.Wait()

		state := func(key string) func(context.Context) (string, error) {
			return func(ctx context.Context) (string, error) {
				r, err := in.row(ctx, key)
				return r.state, err
			}
		}
		for key, want := range map[string]string{doneKey: "DONE", retriedKey: "DONE", deadKey: "DEAD"} {
			Eventually(state(key)).WithContext(ctx).WithTimeout(60*time.Second).WithPolling(50*time.Millisecond).
				Should(Equal(want), key)
		}
		// The dead letter is replayed once GitLab answers again: the replay's attempt
		// belongs to the same delivery, so to the same trace.
		fake.heal(3)
		dead, err := in.row(ctx, deadKey)
		Expect(err).NotTo(HaveOccurred())
		s.call(ctx, http.MethodPost, fmt.Sprintf("/api/workspaces/acme/integration/dead-letters/%d/replay", dead.id), nil, http.StatusOK)
		Eventually(state(deadKey)).WithContext(ctx).WithTimeout(60 * time.Second).WithPolling(50 * time.Millisecond).
			Should(Equal("DONE"))
		detail = s.call(ctx, http.MethodGet, fmt.Sprintf("/api/workspaces/acme/integration/deliveries/%d", dead.id), nil, http.StatusOK)
		s.Stop() // the stop exports what the batcher still holds

		rows = map[string]row{}
		for _, key := range []string{doneKey, retriedKey, deadKey} {
			r, err := in.row(ctx, key)
			Expect(err).NotTo(HaveOccurred())
			rows[key] = r
		}
		spans = exporter.GetSpans()
	})

	withKey := func(name, key string) tracetest.SpanStubs {
		var out tracetest.SpanStubs
		for _, s := range spansNamed(spans, name) {
			if spanAttr(s, telemetry.AttrDeliveryKey).AsString() == key {
				out = append(out, s)
			}
		}
		return out
	}
	request := func(key string) tracetest.SpanStub {
		GinkgoHelper()
		reqs := withKey("POST /webhooks/gitlab/:connectionId", key)
		Expect(reqs).To(HaveLen(1), "one request span names the delivery key %s", key)
		return reqs[0]
	}

	It("names the provider and the provider's delivery id on each request span, each the root of a trace of its own", func() {
		traces := map[trace.TraceID]string{}
		for _, key := range []string{doneKey, retriedKey, deadKey} {
			req := request(key)
			Expect(req.Parent.IsValid()).To(BeFalse(), "the request span is a root")
			Expect(spanAttr(req, telemetry.AttrProvider).AsString()).To(Equal("gitlab"))
			traces[req.SpanContext.TraceID()] = key
		}
		Expect(traces).To(HaveLen(3), "three deliveries admitted at once are three traces")
	})

	It("puts every attempt of a row, retries and the replay's included, in its request's trace with the row id and the same key", func() {
		wantAttempts := map[string]int{doneKey: 1, retriedKey: 2, deadKey: 4} // three, then the replay's
		for key, n := range wantAttempts {
			req := request(key)
			attempts := withKey("inbox.attempt", key)
			Expect(attempts).To(HaveLen(n), key)
			for _, at := range attempts {
				Expect(at.SpanContext.TraceID()).To(Equal(req.SpanContext.TraceID()), key)
				Expect(at.Parent.SpanID()).To(Equal(req.SpanContext.SpanID()), key)
				Expect(spanAttr(at, telemetry.AttrDeliveryID).AsInt64()).To(Equal(rows[key].id), key)
			}
		}
		outcomes := func(key string) []string {
			var out []string
			for _, at := range withKey("inbox.attempt", key) {
				out = append(out, spanAttr(at, telemetry.AttrOutcome).AsString())
			}
			return out
		}
		Expect(outcomes(doneKey)).To(ConsistOf("done"))
		Expect(outcomes(retriedKey)).To(ConsistOf("retried", "done"))
		Expect(outcomes(deadKey)).To(ConsistOf("retried", "retried", "dead", "done"))
	})

	It("makes each attempt's provider call a child of that attempt", func() {
		byID := map[trace.SpanID]tracetest.SpanStub{}
		for _, s := range spans {
			byID[s.SpanContext.SpanID()] = s
		}
		for _, key := range []string{doneKey, retriedKey, deadKey} {
			for _, at := range withKey("inbox.attempt", key) {
				var calls int
				for _, c := range spansNamed(spans, "GET /api/v4/projects/:id/merge_requests/:id/approvals") {
					for p := c.Parent.SpanID(); p.IsValid(); p = byID[p].Parent.SpanID() {
						if p == at.SpanContext.SpanID() {
							calls++
							break
						}
						if _, ok := byID[p]; !ok {
							break
						}
					}
				}
				Expect(calls).To(Equal(1), "attempt %d of %s", spanAttr(at, telemetry.AttrAttempt).AsInt64(), key)
			}
		}
	})

	It("shows the trace id in the delivery detail", func() {
		Expect(detail["traceId"]).To(Equal(request(deadKey).SpanContext.TraceID().String()))
		Expect(detail["deliveryKey"]).To(Equal(deadKey))
	})

	It("writes the trace and span ids on the log lines written in a delivery's spans", func() {
		traceOf := map[string]string{}
		for _, key := range []string{doneKey, retriedKey, deadKey} {
			traceOf[key] = request(key).SpanContext.TraceID().String()
		}
		admitted := 0
		for _, e := range logs.FilterMessage("webhook admitted").All() {
			fields := e.ContextMap()
			key, _ := fields["deliveryKey"].(string)
			if want, ok := traceOf[key]; ok {
				admitted++
				Expect(fields["trace_id"]).To(Equal(want), key)
				Expect(fields["span_id"]).NotTo(BeEmpty(), key)
			}
		}
		Expect(admitted).To(Equal(3))
		// The dead letter's log line (its sanitized cause) is written in its last attempt.
		var deadLines int
		for _, e := range logs.All() {
			if e.Level >= zapcore.WarnLevel && e.ContextMap()["trace_id"] == traceOf[deadKey] {
				deadLines++
			}
		}
		Expect(deadLines).To(BeNumerically(">=", 1), "the failure lines of the dead delivery carry its trace")
	})
})

// scriptedGitLab answers the merge request approvals read per merge request iid: once with
// the status in once (then 200), or always with the status in always until healed.
type scriptedGitLab struct {
	*httptest.Server
	mu     sync.Mutex
	once   map[int]int
	always map[int]int
}

func newScriptedGitLab(once, always map[int]int) *scriptedGitLab {
	f := &scriptedGitLab{once: once, always: always}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/approvals") {
			parts := strings.Split(r.URL.Path, "/")
			iid, _ := strconv.Atoi(parts[len(parts)-2])
			f.mu.Lock()
			status, ok := f.always[iid]
			if !ok {
				if status, ok = f.once[iid]; ok {
					delete(f.once, iid)
				}
			}
			f.mu.Unlock()
			if ok {
				w.WriteHeader(status)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"approved":false,"approvals_left":1}`)
			return
		}
		if r.URL.Path == fmt.Sprintf("/api/v4/projects/%d", projectID) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"id":%d,"path_with_namespace":"acme/api"}`, projectID)
			return
		}
		http.NotFound(w, r)
	}))
	DeferCleanup(f.Close)
	return f
}

// heal makes merge request iid's reads succeed from now on.
func (f *scriptedGitLab) heal(iid int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.always, iid)
}
