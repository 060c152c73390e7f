package admission_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/admissionstore"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// traceParentOf is the stored traceparent of each row of a delivery key ("" for NULL).
func traceParentOf(ctx context.Context, deliveryKey string) []string {
	GinkgoHelper()
	return support.Column(ctx, observer, `SELECT coalesce(trace_parent, '') FROM provider_event
		WHERE delivery_key = $1 ORDER BY workspace_id NULLS FIRST`, deliveryKey)
}

// The request's trace context is stored with every row it admits, by each of the
// admission store's three inserts (the hand-encoded single row, the many-row arrays, the group
// transaction's rows), so each attempt's span can be its child.
var _ = Describe("The trace context stored with admitted rows", func() {
	It("is stored by the single-row and the many-row insert, and is NULL when the request was not traced", func(ctx SpecContext) {
		acme := createWorkspace(ctx, "acme")
		app := createConnection(ctx, conn{Workspace: acme, Kind: kindHubApp, SourceKey: "1001"})
		subject, err := inbox.NewSubject("testhub", "repository", "1296269")
		Expect(err).NotTo(HaveOccurred())
		row := func(key string, workspaceID, connectionID int64, control bool, tp string) ports.NewRow {
			d, err := inbox.NewDelivery(inbox.Admission{WorkspaceID: workspaceID, Provider: testHub, EventType: "issues",
				DeliveryKey: key, Subject: subject, Control: control}, time.Now())
			Expect(err).NotTo(HaveOccurred())
			return ports.NewRow{Delivery: d, ConnectionID: connectionID, Payload: json.RawMessage(`{}`), TraceParent: tp}
		}
		store, err := admissionstore.New(admissionPool)
		Expect(err).NotTo(HaveOccurred())
		insert := func(rows ...ports.NewRow) {
			Expect(store.Admit(ctx, func(ctx context.Context, tx ports.AdmissionTx) error {
				_, err := tx.Insert(ctx, rows)
				return err
			})).To(Succeed())
		}
		const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		insert(row("one", acme, app, false, tp))
		insert(row("many", acme, app, false, tp), row("many", 0, 0, true, tp))
		insert(row("untraced-one", acme, app, false, ""))
		insert(row("untraced-many", acme, app, false, ""), row("untraced-many", 0, 0, true, ""))

		Expect(traceParentOf(ctx, "one")).To(Equal([]string{tp}))
		Expect(traceParentOf(ctx, "many")).To(Equal([]string{tp, tp}))
		Expect(traceParentOf(ctx, "untraced-one")).To(Equal([]string{""}))
		Expect(traceParentOf(ctx, "untraced-many")).To(Equal([]string{"", ""}))
	})

	It("stores each delivery's own request span context when deliveries share a group transaction", func(ctx SpecContext) {
		exporter := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
		otel.SetTracerProvider(tp)
		DeferCleanup(func(ctx context.Context) {
			otel.SetTracerProvider(noop.NewTracerProvider())
			Expect(tp.Shutdown(ctx)).To(Succeed())
		})

		r := newReceiver(receiverOptions{pool: groupPool(ctx)})
		acme := createWorkspace(ctx, "acme")
		app := createConnection(ctx, conn{Workspace: acme, Kind: kindHubApp, SourceKey: "1001"})
		repo := hubResource{Type: "repository", ID: "1296269"}
		subscribe(ctx, app, "repository", repo.ID)
		work := hubBody{Event: "issues", Installation: "1001", Resources: []hubResource{repo}}
		Expect(r.deliver("warm-up", work).status).To(Equal(202)) // remembers the route

		hold := openTx(ctx, `SELECT 1 FROM workspace WHERE id = $1 FOR UPDATE`, acme)
		first := deliverAsync(r, "first", work)
		support.EventuallyBlockedBy(ctx, observer, support.BackendPID(ctx, hold), 1)
		answers := []<-chan response{deliverAsync(r, "g-0", work), deliverAsync(r, "g-1", work)}
		Eventually(r.store.Waiting).WithTimeout(10 * time.Second).WithPolling(time.Millisecond).Should(Equal(2))
		Expect(hold.Rollback(ctx)).To(Succeed())
		Expect(receiveAnswer(first).status).To(Equal(202))
		for _, a := range answers {
			Expect(receiveAnswer(a).status).To(Equal(202))
		}
		transactions, _ := r.store.Groups()
		Expect(transactions).To(BeEquivalentTo(2), "the held group, then one for g-0 and g-1")

		// Each stored traceparent is its own request's span.
		requests := map[string]bool{}
		for _, s := range exporter.GetSpans() {
			if s.Name == "POST /webhooks/testhub" {
				requests[fmt.Sprintf("00-%s-%s-01", s.SpanContext.TraceID(), s.SpanContext.SpanID())] = true
			}
		}
		// The group transaction g-0 and g-1 shared is a span in the trace of the one that led it,
		// linking the other's admission span; both admission spans record the group's size.
		var group []tracetest.SpanStub
		admissions := map[string]tracetest.SpanStub{} // by trace id
		for _, s := range exporter.GetSpans() {
			switch s.Name {
			case "admission.group_transaction":
				for _, kv := range s.Attributes {
					if kv.Key == "hephaestus.admission.group_size" && kv.Value.AsInt64() == 2 {
						group = append(group, s)
					}
				}
			case "admission.transaction":
				admissions[s.SpanContext.TraceID().String()] = s
			}
		}
		Expect(group).To(HaveLen(1))
		Expect(group[0].Links).To(HaveLen(1))
		linked := group[0].Links[0].SpanContext
		Expect(admissions).To(HaveKey(linked.TraceID().String()))
		Expect(admissions[linked.TraceID().String()].SpanContext.SpanID()).To(Equal(linked.SpanID()))
		Expect(linked.TraceID()).NotTo(Equal(group[0].SpanContext.TraceID()))
		member := admissions[linked.TraceID().String()]
		Expect(member.Links).To(HaveLen(1), "the member links the group transaction back")
		Expect(member.Links[0].SpanContext.SpanID()).To(Equal(group[0].SpanContext.SpanID()))

		seen := map[string]bool{}
		for _, key := range []string{"warm-up", "first", "g-0", "g-1"} {
			stored := traceParentOf(ctx, key)
			Expect(stored).To(HaveLen(1), key)
			Expect(requests).To(HaveKey(stored[0]), key)
			Expect(seen).NotTo(HaveKey(stored[0]), "%s has a trace of its own", key)
			seen[stored[0]] = true
		}
	})
})
