package tracing_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
)

// The person erasure runner and the GitHub redelivery reconciler, as bootstrap wires them in a
// server with the in-memory exporter where the OTLP one goes: each pass and each run is a root
// span of its own.
var _ = Describe("Erasure passes and redelivery runs as spans", Ordered, func() {
	const (
		personID    = "583231"
		personLogin = "octocat"
	)
	var (
		spans    tracetest.SpanStubs
		erasure  int64
		stores   []string
		fake     *fakeGitHubApp
		keyPEM   string
		hookJWTs []string
	)

	BeforeAll(func(ctx SpecContext) {
		in := newInstance(ctx)
		exporter := tracetest.NewInMemoryExporter()
		fake = newFakeGitHubApp()
		keyPEM = newAppKeyPEM()
		s := in.start("server-c", map[string]string{
			"HEPHAESTUS_GITHUB_APP_ID":              "4711",
			"HEPHAESTUS_GITHUB_APP_PRIVATE_KEY":     keyPEM,
			"HEPHAESTUS_GITHUB_WEBHOOK_SECRET":      "tracing-github-webhook-secret-0123",
			"HEPHAESTUS_GITHUB_API_URL":             fake.URL,
			"HEPHAESTUS_GITHUB_REDELIVERY_INTERVAL": "1h", // one run, at start
		}, keptSpans{exporter})

		started := s.call(ctx, http.MethodPost, "/api/admin/erasures", map[string]any{
			"provider": "GITHUB", "sourceServerUrl": "https://github.com",
			"identities": []map[string]any{{"id": personID, "login": personLogin}},
		}, http.StatusAccepted)
		erasure = int64(started["id"].(float64))
		Eventually(func(ctx context.Context) any {
			return s.call(ctx, http.MethodGet, fmt.Sprintf("/api/admin/erasures/%d", erasure), nil, http.StatusOK)["state"]
		}).WithContext(ctx).WithTimeout(60 * time.Second).WithPolling(50 * time.Millisecond).Should(Equal("DONE"))
		for _, r := range s.call(ctx, http.MethodGet, fmt.Sprintf("/api/admin/erasures/%d", erasure), nil, http.StatusOK)["receipts"].([]any) {
			stores = append(stores, r.(map[string]any)["store"].(string))
		}
		Eventually(fake.listReads).WithTimeout(60*time.Second).Should(BeNumerically(">=", 1), "the reconciler ran at start")
		s.Stop() // the stop exports what the batcher still holds
		hookJWTs = fake.tokens()
		spans = exporter.GetSpans()
	})

	named := func(name string) tracetest.SpanStubs { return spansNamed(spans, name) }
	attr := spanAttr
	It("records each erasure pass as a root span naming its erasure, store, pass and server, and no identity value", func() {
		passes := named("erasure.pass")
		Expect(stores).NotTo(BeEmpty(), "the erasure committed its passes")
		Expect(passes).To(HaveLen(len(stores)), "one span per committed pass")
		seen := []string{}
		for _, p := range passes {
			Expect(p.Parent.IsValid()).To(BeFalse(), "a root span")
			Expect(attr(p, "hephaestus.erasure.id").AsInt64()).To(Equal(erasure))
			Expect(attr(p, "hephaestus.erasure.pass").AsInt64()).To(BeNumerically(">=", 1))
			Expect(attr(p, telemetry.AttrServer).AsString()).To(Equal("server-c"))
			seen = append(seen, attr(p, "hephaestus.erasure.store").AsString())
			noSecretIn(p, personID, personLogin)
		}
		Expect(seen).To(ConsistOf(stores))
	})

	It("records the GitHub redelivery reconciler's run as a root span naming its provider and server, with no token in it", func() {
		runs := named("github.redelivery_run")
		Expect(runs).NotTo(BeEmpty())
		Expect(hookJWTs).NotTo(BeEmpty(), "the run read GitHub's deliveries with the App's JWT")
		forbidden := []string{keyPEM[40:80]}
		for _, t := range hookJWTs {
			forbidden = append(forbidden, strings.TrimPrefix(t, "Bearer "))
		}
		for _, r := range runs {
			Expect(r.Parent.IsValid()).To(BeFalse(), "a root span")
			Expect(attr(r, telemetry.AttrProvider).AsString()).To(Equal("github"))
			Expect(attr(r, telemetry.AttrServer).AsString()).To(Equal("server-c"))
		}
		for _, s := range spans {
			noSecretIn(s, forbidden...)
		}
	})
})

// fakeGitHubApp answers the App's hook deliveries list (no failed delivery) and records the
// Authorization header of each read.
type fakeGitHubApp struct {
	*httptest.Server
	mu    sync.Mutex
	auths []string
}

func newFakeGitHubApp() *fakeGitHubApp {
	f := &fakeGitHubApp{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/app/hook/deliveries") {
			f.mu.Lock()
			f.auths = append(f.auths, r.Header.Get("Authorization"))
			f.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `[]`)
			return
		}
		http.NotFound(w, r)
	}))
	DeferCleanup(f.Close)
	return f
}

func (f *fakeGitHubApp) listReads() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.auths)
}

func (f *fakeGitHubApp) tokens() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.auths...)
}
