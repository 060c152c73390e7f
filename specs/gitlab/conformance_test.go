package gitlab_test

import (
	"context"
	"encoding/base64"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabread"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
	"github.com/hephaestus-dev/hephaestus/specs/providersuite"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// signingKey is the Standard Webhooks key of the conformance suite's connection.
var signingKey = []byte("0123456789abcdef0123456789abcdef")

// conformanceMirror is the publishing mirror store the conformance suite's handlers write.
var conformanceMirror *gitlabmirror.Store

var _ = providersuite.Run(providersuite.Fixture{
	Name:    "GitLab",
	Package: "gitlab",
	Harness: harness,
	Webhook: support.Must(gitlab.NewWebhook(gitlab.Config{})),
	Reasons: gitlab.Module{},
	Connection: &ports.SourceConnection{ID: 3, WorkspaceID: 1, Kind: gitlab.Kind, State: connection.Active,
		SourceServerURL: gitlabSource, Secret: []byte("whsec_" + base64.StdEncoding.EncodeToString(signingKey))},
	Request: func(body []byte, signed bool) ports.Request {
		now := time.Now()
		sig := providersuite.Sign(signingKey, signed, []byte("msg_1."+providersuite.Unix(now.Unix())+"."), body)
		return ports.Request{Body: body, ConnectionID: 3, ReceivedAt: now, Headers: providersuite.Headers(
			"X-Gitlab-Event", "Issue Hook", "webhook-id", "msg_1", "webhook-timestamp", providersuite.Unix(now.Unix()),
			"webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(sig))}
	},
	Body:   []byte(anaPayloads()["Issue Hook"]),
	Source: gitlabSource,
	Connect: func(ctx context.Context, pool *pgxpool.Pool, ws int64) int64 {
		return providersuite.Connection(ctx, pool, ws, "GITLAB", "GITLAB", gitlabSource, "", `{"groupId":42}`,
			"group", "42", "project", "101")
	},
	Handlers: func(pool *pgxpool.Pool, inbox ports.DeliveryInbox, reg *consumer.Registry, pub ports.ChangePublisher) contract.PersonDataStore {
		var err error
		conformanceMirror, err = gitlabmirror.New(pool)
		Expect(err).NotTo(HaveOccurred())
		Expect(conformanceMirror.PublishChanges(pub, gitlabread.Views{})).To(Succeed())
		Expect(gitlabhandlers.Register(reg, gitlabhandlers.Deps{Inbox: inbox, Store: conformanceMirror, Reader: &fakeReader{}})).To(Succeed())
		return conformanceMirror
	},
	PersonFields: gitlabread.PersonFields,
	Events: func(_ int64, marker string) []providersuite.Event {
		var out []providersuite.Event
		for event, payload := range anaPayloads() {
			payload = strings.ReplaceAll(payload, `"name":"api"`, `"name":"`+marker+`"`)
			payload = strings.ReplaceAll(payload, `"title":"Fix the crash"`, `"title":"`+marker+`"`)
			out = append(out, providersuite.Event{Type: event, Subject: "gitlab:project:101", Payload: payload})
		}
		return out
	},
	Person: providersuite.Person{ID: anaID, Login: anaUsername, Email: anaEmail, Traces: []string{anaID, anaUsername, anaName, anaEmail}},
	Teardown: func(ctx context.Context, pool *pgxpool.Pool, ws, conn int64) {
		providersuite.Uninstall(ctx, pool, conn, func(ctx context.Context, tx ports.Tx) error {
			return conformanceMirror.TeardownConnection(ctx, tx, ws, conn)
		})
	},
	ReadPaths: func(slug string) []string {
		return []string{"/api/workspaces/" + slug + "/gitlab/projects", "/api/workspaces/" + slug + "/gitlab/projects/101/merge-requests"}
	},
})
