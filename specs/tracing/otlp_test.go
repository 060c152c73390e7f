package tracing_test

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.opentelemetry.io/otel"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// receiver is an OTLP/HTTP trace receiver: it decodes each export request's protobuf body and
// keeps the span names and service names it carried.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	requests int
	spans    []string
	services []string
}

func newReceiver() *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		defer GinkgoRecover()
		Expect(req.URL.Path).To(Equal("/v1/traces"))
		Expect(req.Header.Get("Content-Type")).To(Equal("application/x-protobuf"))
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			gz, err := gzip.NewReader(req.Body)
			Expect(err).NotTo(HaveOccurred())
			body = gz
		}
		raw, err := io.ReadAll(body)
		Expect(err).NotTo(HaveOccurred())
		var export coltracepb.ExportTraceServiceRequest
		Expect(proto.Unmarshal(raw, &export)).To(Succeed())
		r.mu.Lock()
		r.requests++
		for _, rs := range export.GetResourceSpans() {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.GetKey() == "service.name" {
					r.services = append(r.services, a.GetValue().GetStringValue())
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					r.spans = append(r.spans, s.GetName())
				}
			}
		}
		r.mu.Unlock()
		answer, err := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		Expect(err).NotTo(HaveOccurred())
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(answer)
	}))
	DeferCleanup(r.Close)
	return r
}

func (r *receiver) received() (requests int, spans, services []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests, append([]string(nil), r.spans...), append([]string(nil), r.services...)
}

// setenv sets a process variable for the spec (the OTLP exporter reads the process
// environment) and restores it after.
func setenv(name, value string) {
	old, had := os.LookupEnv(name)
	Expect(os.Setenv(name, value)).To(Succeed())
	DeferCleanup(func() {
		if had {
			_ = os.Setenv(name, old)
		} else {
			_ = os.Unsetenv(name)
		}
	})
}

var _ = Describe("Trace export configured by the standard OTEL_* variables", func() {
	// handleOne runs a server, has it admit and handle one delivery, and stops it.
	handleOne := func(ctx context.Context, in *instance, during func()) row {
		GinkgoHelper()
		fake := newFakeGitLab(0)
		s := in.start("server-otlp", map[string]string{"HEPHAESTUS_GITLAB_API_URL": fake.URL + "/api/v4"}, nil)
		t := in.tenant(ctx, s, "acme")
		key := "7d1c2b90-0e4f-4c3e-9a51-000000000002"
		s.deliver(ctx, t, key, mergeRequest(2))
		Eventually(func(ctx context.Context) (string, error) {
			r, err := in.row(ctx, key)
			return r.state, err
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond).Should(Equal("DONE"))
		during()
		s.Stop()
		r, err := in.row(ctx, key)
		Expect(err).NotTo(HaveOccurred())
		return r
	}

	It("exports the delivery's spans over OTLP/HTTP to OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", func(ctx SpecContext) {
		rcv := newReceiver()
		setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", rcv.URL+"/v1/traces")
		setenv("OTEL_TRACES_SAMPLER", "always_on")
		in := newInstance(ctx)
		r := handleOne(ctx, in, func() {})
		Expect(r.traceParent).NotTo(BeNil(), "the row keeps the request's trace context")
		requests, spans, services := rcv.received()
		Expect(requests).To(BeNumerically(">", 0))
		Expect(spans).To(ContainElements("POST /webhooks/gitlab/:connectionId", "admission.transaction",
			"inbox.attempt", "inbox.claim", "inbox.step", "inbox.outcome_write",
			"GET /api/v4/projects/:id/merge_requests/:id/approvals"))
		Expect(services).To(HaveEach("hephaestus"))
	})

	It("exports nothing, records nothing and stores no trace context when the variables are unset", func(ctx SpecContext) {
		rcv := newReceiver() // listening, but named by no variable
		for _, name := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
			setenv(name, "")
		}
		in := newInstance(ctx)
		r := handleOne(ctx, in, func() {
			_, span := otel.Tracer("spec").Start(ctx, "probe")
			defer span.End()
			Expect(span.IsRecording()).To(BeFalse(), "the running server installed no SDK tracer provider")
		})
		Expect(r.traceParent).To(BeNil())
		requests, spans, _ := rcv.received()
		Expect(requests).To(BeZero())
		Expect(spans).To(BeEmpty())
	})

	It("exports nothing to the configured endpoint when OTEL_SDK_DISABLED is true", func(ctx SpecContext) {
		rcv := newReceiver()
		setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", rcv.URL+"/v1/traces")
		setenv("OTEL_SDK_DISABLED", "true")
		in := newInstance(ctx)
		r := handleOne(ctx, in, func() {})
		Expect(r.traceParent).To(BeNil())
		requests, _, _ := rcv.received()
		Expect(requests).To(BeZero())
	})
})
