package github_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubread"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
	"github.com/hephaestus-dev/hephaestus/specs/providersuite"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// webhookSecret is the App's webhook secret in the conformance suite.
const webhookSecret = "app-webhook-secret"

// conformanceMirror is the publishing mirror store the conformance suite's handlers write.
var conformanceMirror *githubmirror.Store

// personIssue is an issues delivery of the person's issue in acme/app, titled title.
func personIssue(title string) []byte {
	i := issue(3001, 1, title, "2024-02-02T00:00:00Z")
	i["user"] = user(21031067, personLogin)
	return support.Must(json.Marshal(obj{"action": "opened", "issue": i, "repository": repository(4242, "acme/app", 77),
		"sender": user(21031067, personLogin)}))
}

var _ = providersuite.Run(providersuite.Fixture{
	Name:    "GitHub",
	Package: "github",
	Harness: harness,
	Webhook: support.Must(github.NewWebhook(github.Config{WebhookSecret: []byte(webhookSecret)})),
	Reasons: github.Module{},
	Request: func(b []byte, signed bool) ports.Request {
		sig := providersuite.Sign([]byte(webhookSecret), signed, b)
		return ports.Request{Body: b, ReceivedAt: time.Now(), Headers: providersuite.Headers("X-GitHub-Event", "issues",
			"X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958", "X-Hub-Signature-256", "sha256="+hex.EncodeToString(sig))}
	},
	Body: support.Must(json.Marshal(obj{"action": "opened", "issue": issue(3001, 1, "Crash on start", "2024-02-02T00:00:00Z"),
		"repository": repository(4242, "acme/app", 77), "installation": obj{"id": 1001}})),
	Source:                "https://github.com",
	InstallationNamespace: "https://github.com",
	Connect: func(ctx context.Context, pool *pgxpool.Pool, ws int64) int64 {
		return providersuite.Connection(ctx, pool, ws, "GITHUB", "GITHUB_PAT", "https://github.com", "", `{"login":"spec"}`,
			"repository", "4242")
	},
	Handlers: func(pool *pgxpool.Pool, inbox ports.DeliveryInbox, reg *consumer.Registry, pub ports.ChangePublisher) contract.PersonDataStore {
		var err error
		conformanceMirror, err = githubmirror.New(pool)
		Expect(err).NotTo(HaveOccurred())
		Expect(conformanceMirror.PublishChanges(pub, githubread.Views{})).To(Succeed())
		Expect(githubhandlers.Register(reg, githubhandlers.Deps{Inbox: inbox, Store: conformanceMirror})).To(Succeed())
		return conformanceMirror
	},
	PersonFields: githubread.PersonFields,
	Events: func(_ int64, marker string) []providersuite.Event {
		pr := pullRequest(9001, 11, sha(51))
		pr["user"] = user(21031067, personLogin)
		return []providersuite.Event{
			{Type: "issues", Subject: "github:issue:3001", Payload: string(personIssue(marker))},
			{Type: "pull_request", Subject: "github:pull_request:9001", Payload: string(body(obj{
				"action": "opened", "pull_request": pr, "repository": repository(4242, "acme/app", 77)}))},
		}
	},
	Person: providersuite.Person{ID: personID, Login: personLogin, Traces: []string{personID, personLogin}},
	Teardown: func(ctx context.Context, pool *pgxpool.Pool, ws, conn int64) {
		providersuite.Uninstall(ctx, pool, conn, func(ctx context.Context, tx ports.Tx) error {
			return conformanceMirror.TeardownConnection(ctx, tx, ws, conn)
		})
	},
	ReadPaths: func(slug string) []string {
		return []string{"/api/workspaces/" + slug + "/repositories", "/api/workspaces/" + slug + "/repositories/4242/issues",
			"/api/workspaces/" + slug + "/repositories/4242/pulls"}
	},
})
