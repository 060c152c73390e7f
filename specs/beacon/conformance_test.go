package beacon_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/beacon"
	"github.com/hephaestus-dev/hephaestus/adapters/beacon/beaconhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/beacon/beaconmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/beacon/beaconread"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
	"github.com/hephaestus-dev/hephaestus/specs/providersuite"
)

const (
	signingSecret = "bcn_whs_0123456789abcdef"
	beaconSource  = "https://status.beacon.test"
	authorID      = "usr-ana-7"
	authorName    = "Ana Lindqvist"
)

// incident is a Beacon delivery of eventType about incident inc_42, titled title, written by
// Ana, as Beacon sends it.
func incident(deliveryID, eventType, title string) string {
	body, err := json.Marshal(map[string]any{"id": deliveryID, "type": eventType, "incident": map[string]any{
		"id": "inc_42", "pageId": "pg_main", "title": title, "status": "investigating", "impact": "minor",
		"updatedAt": "2026-11-30T08:00:00Z", "resolvedAt": nil,
		"author": map[string]any{"id": authorID, "name": authorName, "email": "ana@beacon.test"},
	}})
	if err != nil {
		panic(err)
	}
	return string(body)
}

// signature is the Beacon-Signature header of body under secret (or another secret when
// !signed) at now.
func signature(body []byte, signed bool) string {
	t := strconv.FormatInt(time.Now().Unix(), 10)
	return "t=" + t + ",v1=" + hex.EncodeToString(providersuite.Sign([]byte(signingSecret), signed, []byte(t+"."), body))
}

// conformanceMirror is the publishing mirror store the suite's handlers write.
var conformanceMirror *beaconmirror.Store

var _ = providersuite.Run(providersuite.Fixture{
	Name:    "Beacon",
	Package: "beacon",
	Harness: harness,
	Webhook: beacon.NewWebhook(beacon.Config{}),
	Reasons: beacon.Module{},
	Connection: &ports.SourceConnection{ID: 3, WorkspaceID: 1, Kind: beacon.Kind, State: connection.Active,
		SourceServerURL: beaconSource, Config: map[string]any{}, Secret: []byte(signingSecret)},
	Request: func(body []byte, signed bool) ports.Request {
		return ports.Request{Body: body, ConnectionID: 3, ReceivedAt: time.Now(),
			Headers: providersuite.Headers(beacon.HeaderSignature, signature(body, signed))}
	},
	Body:   []byte(incident("dlv_1", "incident.opened", "API latency")),
	Source: beaconSource,
	Connect: func(ctx context.Context, pool *pgxpool.Pool, ws int64) int64 {
		return providersuite.Connection(ctx, pool, ws, "BEACON", "BEACON", beaconSource, "", `{}`)
	},
	Handlers: func(pool *pgxpool.Pool, inbox ports.DeliveryInbox, reg *consumer.Registry, pub ports.ChangePublisher) contract.PersonDataStore {
		var err error
		conformanceMirror, err = beaconmirror.New(pool)
		Expect(err).NotTo(HaveOccurred())
		Expect(conformanceMirror.PublishChanges(pub, beaconread.Views{})).To(Succeed())
		Expect(beaconhandlers.Register(reg, beaconhandlers.Deps{Inbox: inbox, Store: conformanceMirror})).To(Succeed())
		return conformanceMirror
	},
	PersonFields: beaconread.PersonFields,
	Events: func(_ int64, marker string) []providersuite.Event {
		return []providersuite.Event{{Type: "incident.updated", Subject: "beacon:incident:inc_42", Payload: incident("dlv_2", "incident.updated", marker)}}
	},
	Person: providersuite.Person{ID: authorID, Email: "ana@beacon.test", Traces: []string{authorID, authorName}},
	Teardown: func(ctx context.Context, pool *pgxpool.Pool, ws, conn int64) {
		providersuite.Uninstall(ctx, pool, conn, func(ctx context.Context, tx ports.Tx) error {
			return conformanceMirror.TeardownConnection(ctx, tx, ws, conn)
		})
	},
	ReadPaths: func(slug string) []string { return []string{"/api/workspaces/" + slug + "/beacon/incidents"} },
})
