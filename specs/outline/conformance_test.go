package outline_test

import (
	"context"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinehandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemirror"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlineread"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
	"github.com/hephaestus-dev/hephaestus/specs/providersuite"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// signingSecret is the conformance suite's connection secret.
const signingSecret = "ol_whs_0123456789abcdef"

// conformanceMirror is the publishing mirror store the conformance suite's handlers write.
var conformanceMirror *outlinemirror.Store

var _ = providersuite.Run(providersuite.Fixture{
	Name:    "Outline",
	Package: "outline",
	Harness: harness,
	Webhook: support.Must(outline.NewWebhook(outline.Config{})),
	Reasons: outline.Module{},
	Connection: &ports.SourceConnection{ID: 3, WorkspaceID: 1, Kind: outline.Kind, State: connection.Active,
		SourceServerURL: outlineSource, Config: map[string]any{}, Secret: []byte(signingSecret)},
	Request: func(body []byte, signed bool) ports.Request {
		now := time.Now()
		t := strconv.FormatInt(now.UnixMilli(), 10)
		sig := providersuite.Sign([]byte(signingSecret), signed, []byte(t+"."), body)
		return ports.Request{Body: body, ConnectionID: 3, ReceivedAt: now,
			Headers: providersuite.Headers("Outline-Signature", "t="+t+",s="+hex.EncodeToString(sig))}
	},
	Body:   []byte(personPayload("Runbook")),
	Source: outlineSource,
	Connect: func(ctx context.Context, pool *pgxpool.Pool, ws int64) int64 {
		return providersuite.Connection(ctx, pool, ws, "OUTLINE", "OUTLINE", outlineSource, "", `{}`, "collection", collectionID)
	},
	Handlers: func(pool *pgxpool.Pool, inbox ports.DeliveryInbox, reg *consumer.Registry, pub ports.ChangePublisher) contract.PersonDataStore {
		var err error
		conformanceMirror, err = outlinemirror.New(pool)
		Expect(err).NotTo(HaveOccurred())
		Expect(conformanceMirror.PublishChanges(pub, outlineread.Views{})).To(Succeed())
		Expect(outlinehandlers.Register(reg, outlinehandlers.Deps{Inbox: inbox, Store: conformanceMirror})).To(Succeed())
		return conformanceMirror
	},
	PersonFields: outlineread.PersonFields,
	Events: func(_ int64, marker string) []providersuite.Event {
		return []providersuite.Event{{Type: "documents.update", Subject: "outline:document:" + docID, Payload: personPayload(marker)}}
	},
	Person: providersuite.Person{ID: outlinePerson, Traces: []string{outlinePerson, outlinePersonName}},
	Teardown: func(ctx context.Context, pool *pgxpool.Pool, ws, conn int64) {
		providersuite.Uninstall(ctx, pool, conn, func(ctx context.Context, tx ports.Tx) error {
			return conformanceMirror.TeardownConnection(ctx, tx, ws, conn)
		})
	},
	ReadPaths: func(slug string) []string { return []string{"/api/workspaces/" + slug + "/outline/documents"} },
})
