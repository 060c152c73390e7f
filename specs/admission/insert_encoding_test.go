package admission_test

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/admissionstore"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// The single-row insert writes its parameters in PostgreSQL's text format by hand; the
// many-row insert goes through pgx's type map. Both must store a row the same way, to the
// byte and the microsecond.
var _ = Describe("The admission insert's parameters", func() {
	It("store every column of a single row exactly as the many-row insert stores the same row", func(ctx SpecContext) {
		acme := createWorkspace(ctx, "acme")
		app := createConnection(ctx, conn{Workspace: acme, Kind: kindHubApp, SourceKey: "1001"})
		hub, err := provider.New("TESTHUB")
		Expect(err).NotTo(HaveOccurred())
		subject, err := inbox.NewSubject("testhub", "repository", "1296269")
		Expect(err).NotTo(HaveOccurred())
		// Nanoseconds past the microsecond, another zone than UTC, and a time in the past, so
		// that least(due_at, now()) keeps it.
		received := time.Date(2026, 3, 29, 1, 59, 58, 123456789, time.FixedZone("UTC+5:45", 5*3600+45*60))
		payload := json.RawMessage(`{"text":"caf\u00e9 ☕ \"quoted\" \\ back","n":1.50,"nested":{"a":[true,null]}}`)
		headers := map[string]string{
			"X-Quote":                      `a "b" \ c`,
			"X-Unicode":                    "naïve ☕\t",
			"Hephaestus-Source-Server-Url": "https://github.example/",
		}
		row := func(key string, workspaceID, connectionID int64, control bool) ports.NewRow {
			d, err := inbox.NewDelivery(inbox.Admission{WorkspaceID: workspaceID, Provider: hub, EventType: "issues",
				DeliveryKey: key, Subject: subject, Control: control}, received)
			Expect(err).NotTo(HaveOccurred())
			return ports.NewRow{Delivery: d, ConnectionID: connectionID, Payload: payload, Headers: headers}
		}
		store, err := admissionstore.New(admissionPool)
		Expect(err).NotTo(HaveOccurred())
		insert := func(rows ...ports.NewRow) []bool {
			var stored []bool
			Expect(store.Admit(ctx, func(ctx context.Context, tx ports.AdmissionTx) error {
				var err error
				stored, err = tx.Insert(ctx, rows)
				return err
			})).To(Succeed())
			return stored
		}

		Expect(insert(row("one-ws", acme, app, false))).To(Equal([]bool{true}))
		Expect(insert(row("one-control", 0, 0, true))).To(Equal([]bool{true}))
		Expect(insert(row("many", acme, app, false), row("many", 0, 0, true))).To(Equal([]bool{true, true}))
		Expect(insert(row("one-ws", acme, app, false))).To(Equal([]bool{false}), "a duplicate")

		type stored struct {
			Workspace, Connection *int64
			Provider, EventType   string
			Scope, Subject        string
			Payload, Headers      string
			Received, Due         time.Time
			State                 string
		}
		read := func(key string) []stored {
			rows, err := observer.Query(ctx, `
				SELECT workspace_id, connection_id, provider, event_type, scope_key, subject, payload::text,
				       headers::text, received_at, due_at, state
				FROM provider_event WHERE delivery_key = $1 ORDER BY workspace_id NULLS FIRST`, key)
			Expect(err).NotTo(HaveOccurred())
			defer rows.Close()
			var out []stored
			for rows.Next() {
				var s stored
				Expect(rows.Scan(&s.Workspace, &s.Connection, &s.Provider, &s.EventType, &s.Scope, &s.Subject,
					&s.Payload, &s.Headers, &s.Received, &s.Due, &s.State)).To(Succeed())
				out = append(out, s)
			}
			Expect(rows.Err()).NotTo(HaveOccurred())
			return out
		}
		many := read("many")
		Expect(many).To(HaveLen(2))
		Expect(read("one-control")).To(Equal(many[:1]))
		Expect(read("one-ws")).To(Equal(many[1:]))

		// And what they store is the row as given: times to the microsecond, no workspace or
		// connection for the control row.
		want := received.Truncate(time.Microsecond)
		Expect(many[1].Received.Equal(want)).To(BeTrue(), "received_at %s, want %s", many[1].Received, want)
		Expect(many[1].Due.Equal(want)).To(BeTrue())
		Expect(*many[1].Workspace).To(Equal(acme))
		Expect(*many[1].Connection).To(Equal(app))
		Expect(many[0].Workspace).To(BeNil())
		Expect(many[0].Connection).To(BeNil())
		var decoded map[string]any
		Expect(json.Unmarshal([]byte(many[1].Payload), &decoded)).To(Succeed())
		Expect(decoded["text"]).To(Equal(`café ☕ "quoted" \ back`))
		var h map[string]string
		Expect(json.Unmarshal([]byte(many[1].Headers), &h)).To(Succeed())
		Expect(h).To(Equal(headers))
	})
})
