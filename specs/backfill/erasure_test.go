package backfill_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/gin-gonic/gin"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubread"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabapi"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabread"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabsync"
	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlineapi"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemirror"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlineread"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinesync"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackread"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slacksync"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// Person erasure, proven per provider by one search: a person's data arrives through webhooks
// and backfill pages (a fake provider at the configured API root), the person is erased, and
// then every text, json, array and number column of every table the service owns
// (support.SearchEverywhere, enumerated from pg_catalog) and every read API and change-feed
// answer is searched for their id, login, name and e-mail address. The only trace allowed is
// the documented one: the erasure request keeps its frozen identities (resume needs them).

// erasureProof is what a provider's spec hands the shared proof.
type erasureProof struct {
	scope erasure.Scope
	// traces are the person's id, login, name and e-mail (those the provider has).
	traces []string
	// before are places the search must find the person in before the erasure (so the search
	// is known to look where the data is).
	before []support.Trace
	// answers are the read API's and the change feed's answers, concatenated.
	answers func(ctx context.Context) string
	// viewsNamePerson: the provider's views show the person before the erasure (Outline's
	// document and collection views name nobody).
	viewsNamePerson bool
	// kept are the frozen identities' traces: table inbox_erasure, column identities.
	kept []string
}

// prove erases p.scope through every pass and searches everything afterwards.
func prove(ctx context.Context, p erasureProof) []erasure.Receipt {
	GinkgoHelper()
	Expect(support.SearchEverywhere(ctx, pool, p.traces...)).To(ContainElements(p.before), "the search finds the person before")
	before := strings.ToLower(p.answers(ctx))
	found := false
	for _, t := range p.traces {
		found = found || strings.Contains(before, strings.ToLower(t))
	}
	Expect(found).To(Equal(p.viewsNamePerson), "the answers show the person before when the views name people")

	receipts := support.EraseNow(ctx, support.ErasureStore(pool), p.scope)

	var kept []support.Trace
	for _, t := range p.kept {
		kept = append(kept, support.Trace{Table: "inbox_erasure", Column: "identities", Value: t})
	}
	Expect(support.SearchEverywhere(ctx, pool, p.traces...)).To(ConsistOf(kept), "nothing of the person in any table but the request's identities")
	after := strings.ToLower(p.answers(ctx))
	for _, t := range p.traces {
		Expect(after).NotTo(ContainSubstring(strings.ToLower(t)), "no read API or feed answer names the person")
	}
	return receipts
}

// feedAnswer is every change of ws as the feed hands it out.
func feedAnswer(ctx context.Context, feed *changefeed.Store, ws int64) string {
	GinkgoHelper()
	cs, err := feed.Changes(ctx, ws, change.Cursor{}, 1000)
	Expect(err).NotTo(HaveOccurred())
	raw, err := json.Marshal(cs)
	Expect(err).NotTo(HaveOccurred())
	var data strings.Builder
	data.Write(raw)
	for _, c := range cs {
		data.WriteString(string(c.Data))
	}
	return data.String()
}

// getAll reads each path from srv with the instance admin's token and concatenates the bodies.
func getAll(base string, client *httpClient, paths ...string) string {
	GinkgoHelper()
	var all strings.Builder
	for _, p := range paths {
		status, body := client.call(http.MethodGet, base+p, adminToken)
		Expect(status).To(Equal(http.StatusOK), p)
		raw, err := json.Marshal(body)
		Expect(err).NotTo(HaveOccurred())
		all.Write(raw)
	}
	return all.String()
}

// webhookOf stores a delivery of ws with the source header admission sets from the connection
// and runs its handler.
func webhookOf(ctx context.Context, reg *consumer.Registry, ws int64, p provider.Provider, source, eventType, subject, payload string) {
	GinkgoHelper()
	d := support.LeasedEvent(ctx, pool, ws, p, eventType, subject, payload)
	_, err := pool.Exec(ctx, `UPDATE provider_event SET headers = jsonb_build_object('Hephaestus-Source-Server-Url', $2::text) WHERE id = $1`, d.ID, source)
	Expect(err).NotTo(HaveOccurred())
	Expect(d.Handle(ctx, reg)).To(Succeed())
}

func scopeFor(p provider.Provider, source, id, login, email string) erasure.Scope {
	GinkgoHelper()
	i, err := erasure.NewIdentity(id, login, email)
	Expect(err).NotTo(HaveOccurred())
	s, err := erasure.NewScope(p, source, []erasure.Identity{i})
	Expect(err).NotTo(HaveOccurred())
	return s
}

var _ = Describe("Person erasure leaves nothing of the person", func() {
	var feed *changefeed.Store

	BeforeEach(func() {
		var err error
		feed, err = changefeed.New(pool, nil)
		Expect(err).NotTo(HaveOccurred())
	})

	It("in Slack: their messages (pages and webhooks), their mentions in others' messages, the mirror, the inbox, the read API and the feed", func(ctx SpecContext) {
		const (
			person  = "U0PERSON1"
			name    = "Jane Roe"
			channel = "C0ERASE01"
		)
		sl := newFakeSlack()
		sl.channels[channel] = []obj{ // newest first, as conversations.history lists them
			{"type": "message", "user": "U1", "text": "thanks <@" + person + "|" + name + ">", "ts": "1700000100.000200"},
			{"type": "message", "user": person, "text": "paged words of the person", "ts": "1700000100.000100"},
		}
		acme := support.NewWorkspace(ctx, manage, "acme").ID
		conn := slackConnection(ctx, acme)
		registerChannel(ctx, acme, channel, "GRANTED")
		store, err := slackmirror.New(pool)
		Expect(err).NotTo(HaveOccurred())
		Expect(store.PublishChanges(feed, slackread.Views{})).To(Succeed())
		src, err := slacksync.New(slackClient(ctx, sl, pool), store)
		Expect(err).NotTo(HaveOccurred())
		metrics := declaredMetrics("github", "gitlab", "slack", "outline")
		r := newRunner("server-a", jobs, metrics, src)
		subscribeChannel(ctx, acme, conn, channel)
		drainRunner(ctx, r, func() bool { return channelJob(ctx, conn, channel).State == "DONE" })

		reg := slackHandlers(store)
		message := func(envelope, user, text, ts string) string {
			return fmt.Sprintf(`{"type":"event_callback","team_id":%q,"event_id":%q,
				"authorizations":[{"team_id":%q,"user_id":"UBOT","is_bot":true}],
				"event":{"type":"message","channel":%q,"channel_type":"channel","user":%q,"text":%q,"ts":%q,"event_ts":%q}}`,
				slackTeam, envelope, slackTeam, channel, user, text, ts, ts)
		}
		webhookOf(ctx, reg, acme, slack.Provider, "https://slack.com", "message", "slack:channel:"+channel,
			message("Ev1", person, "live words of the person", "1700000200.000100"))
		webhookOf(ctx, reg, acme, slack.Provider, "https://slack.com", "message", "slack:channel:"+channel,
			message("Ev2", "U2", "ask <@"+person+"> about it", "1700000200.000200"))

		srv, c := serve(
			func(e *gin.Engine) error {
				return slackread.Register(e, slackread.Config{Auth: manage, Members: members, Store: store, Log: support.Logger{}})
			},
		)
		read := &httpClient{c}

		receipts := prove(ctx, erasureProof{
			scope:  scopeFor(slack.Provider, "https://slack.com", person, "", ""),
			traces: []string{person, name},
			before: []support.Trace{
				{Table: "slack_message", Column: "user_id", Value: person},
				{Table: "slack_message", Column: "text", Value: name},
				{Table: "provider_event", Column: "payload", Value: person},
				{Table: "workspace_change", Column: "data", Value: person},
			},
			answers: func(ctx context.Context) string {
				return getAll(srv.URL, read, "/api/workspaces/acme/slack/channels/"+channel+"/messages?size=100") + feedAnswer(ctx, feed, acme)
			},
			kept:            []string{person},
			viewsNamePerson: true,
		})
		Expect(receipts[1].Store).To(Equal(erasure.ChangeFeed))
		Expect(receipts[1].Deleted).To(BeNumerically(">=", 2), "the feed's changes of the person's messages, which name them as userId")
		Expect(support.Column(ctx, pool, `SELECT text FROM slack_message WHERE workspace_id = $1 ORDER BY ts`, acme)).
			To(Equal([]string{"thanks <@U00000000>", "ask <@U00000000> about it"}), "the others' messages stay, the mention becomes the tombstone")
	})
	It("in GitLab: their issues and merge requests (pages and hooks), their push and commit trailers, their user namespace, their mentions, the read API and the feed", func(ctx SpecContext) {
		const (
			personID = "48151623"
			login    = "jroe"
			name     = "Jane Roe"
			email    = "jane.roe@example.com"
			source   = "https://gitlab.example"
			shaMine  = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"
			shaAna   = "b1b2c3d4e5f60718293a4b5c6d7e8f9012345678"
		)
		user := fmt.Sprintf(`{"id":%s,"name":%q,"username":%q,"avatar_url":"%s/uploads/%s.png","email":%q}`, personID, name, login, source, login, email)
		ana := `{"id":5,"name":"Ana","username":"ana","email":"ana@example.org"}`
		// A project in the person's user namespace.
		project := `{"id":101,"name":"tools","namespace_id":777,"path_with_namespace":"jroe/tools",
			"web_url":"https://gitlab.example/jroe/tools","default_branch":"main","visibility_level":0}`

		gl := newFakeGitLab()
		gl.lists["/projects/101/issues"] = []obj{
			{"id": 9001, "iid": 1, "project_id": 101, "title": "Crash on start", "description": "It crashes",
				"state": "opened", "author": obj{"id": 48151623, "username": login, "name": name}, "labels": []string{"bug"},
				"web_url": "https://gitlab.example/jroe/tools/-/issues/1", "created_at": "2024-02-01T00:00:00.000Z", "updated_at": "2024-02-02T00:00:00.000Z"},
			{"id": 9002, "iid": 2, "project_id": 101, "title": "Docs", "description": "cc @jroe for review",
				"state": "opened", "author": obj{"id": 5, "username": "ana", "name": "Ana"}, "labels": []string{},
				"web_url": "https://gitlab.example/jroe/tools/-/issues/2", "created_at": "2024-02-01T00:00:00.000Z", "updated_at": "2024-02-02T00:00:00.000Z"},
		}
		gl.lists["/projects/101/merge_requests"] = []obj{
			{"id": 9101, "iid": 7, "project_id": 101, "title": "Fix the crash", "state": "opened", "draft": false,
				"source_branch": "fix", "target_branch": "main", "sha": shaMine, "merge_status": "can_be_merged",
				"author":  obj{"id": 48151623, "username": login, "name": name},
				"web_url": "https://gitlab.example/jroe/tools/-/merge_requests/7", "created_at": "2024-03-01T00:00:00.000Z", "updated_at": "2024-03-02T00:00:00.000Z"},
		}
		acme := support.NewWorkspace(ctx, manage, "acme").ID
		conn := gitlabConnection(ctx, acme)
		store, err := gitlabmirror.New(pool)
		Expect(err).NotTo(HaveOccurred())
		Expect(store.PublishChanges(feed, gitlabread.Views{})).To(Succeed())
		live, err := managementstore.NewLiveSecrets(pool, box)
		Expect(err).NotTo(HaveOccurred())
		client, err := gitlabapi.New(gitlabapi.Config{BaseURL: gl.server.URL, MaxBodyBytes: 8 << 20,
			Token: (&gitlabapi.Credentials{Store: live}).Token})
		Expect(err).NotTo(HaveOccurred())
		src, err := gitlabsync.New(client, store)
		Expect(err).NotTo(HaveOccurred())
		metrics := declaredMetrics("github", "gitlab", "slack", "outline")
		r := newRunner("server-a", jobs, metrics, src)

		reg := gitlabHandlers(store)
		hook := func(event, payload string) {
			GinkgoHelper()
			webhookOf(ctx, reg, acme, gitlab.Provider, source, event, "gitlab:project:101", payload)
		}
		hook("Merge Request Hook", fmt.Sprintf(`{"object_kind":"merge_request","event_type":"merge_request","user":%s,"project":%s,
			"object_attributes":{"id":9101,"iid":7,"target_project_id":101,"title":"Fix the crash","description":"Fixes #1",
			"state":"opened","source_branch":"fix","target_branch":"main","merge_status":"can_be_merged","author_id":%s,
			"url":"https://gitlab.example/jroe/tools/-/merge_requests/7","action":"open","last_commit":{"id":%q},
			"created_at":"2024-03-01T00:00:00Z","updated_at":"2024-03-03T00:00:00Z"}}`, user, project, personID, shaMine))
		hook("Note Hook", fmt.Sprintf(`{"object_kind":"note","event_type":"note","user":%s,"project_id":101,"project":%s,
			"object_attributes":{"id":9201,"note":"@jroe looks good, thanks","noteable_type":"MergeRequest","noteable_id":9101,
			"author_id":5,"project_id":101,"system":false,"url":"https://gitlab.example/jroe/tools/-/merge_requests/7#note_9201",
			"action":"create","created_at":"2024-03-04T00:00:00Z","updated_at":"2024-03-04T00:00:00Z"}}`, ana, project))
		hook("Push Hook", fmt.Sprintf(`{"object_kind":"push","before":"0000000000000000000000000000000000000000","after":%q,
			"ref":"refs/heads/fix","user_id":%s,"user_name":%q,"user_username":%q,"user_email":%q,"project_id":101,"project":%s,
			"commits":[{"id":%q,"message":"Fix the crash\n\nSigned-off-by: %s <%s>","title":"Fix the crash","timestamp":"2024-03-01T10:00:00+02:00",
			"url":"https://gitlab.example/jroe/tools/-/commit/%s","author":{"name":%q,"email":%q}}],"total_commits_count":1}`,
			shaMine, personID, name, login, email, project, shaMine, name, email, shaMine, name, email))
		// Someone else's push of a commit the person co-authored.
		hook("Push Hook", fmt.Sprintf(`{"object_kind":"push","before":%q,"after":%q,
			"ref":"refs/heads/main","user_id":5,"user_name":"Ana","user_username":"ana","user_email":"ana@example.org","project_id":101,"project":%s,
			"commits":[{"id":%q,"message":"Polish\n\nCo-authored-by: %s <%s>\nReviewed-by: Bo <bo@example.org>","title":"Polish","timestamp":"2024-03-02T10:00:00+02:00",
			"url":"https://gitlab.example/jroe/tools/-/commit/%s","author":{"name":"Ana","email":"ana@example.org"}}],"total_commits_count":1}`,
			shaMine, shaAna, project, shaAna, name, email, shaAna))

		subscribeProject(ctx, acme, conn, 101)
		drainRunner(ctx, r, func() bool { return resourceJob(ctx, conn, "project", "101").State == "DONE" })
		Expect(count(ctx, `SELECT count(*) FROM gitlab_issue WHERE workspace_id = $1`, acme)).To(Equal(2), "the pages were mirrored")

		srv, c := serve(
			func(e *gin.Engine) error {
				return gitlabread.Register(e, gitlabread.Config{Auth: manage, Members: members, Store: store, Log: support.Logger{}})
			},
		)
		read := &httpClient{c}

		prove(ctx, erasureProof{
			scope:  scopeFor(gitlab.Provider, source, personID, login, email),
			traces: []string{personID, login, name, email},
			before: []support.Trace{
				{Table: "gitlab_issue", Column: "author_id", Value: personID},
				{Table: "gitlab_issue", Column: "description", Value: login},
				{Table: "gitlab_project", Column: "path_with_namespace", Value: login},
				{Table: "gitlab_commit", Column: "message", Value: email},
				{Table: "gitlab_note", Column: "body", Value: login},
				{Table: "provider_event", Column: "payload", Value: name},
				{Table: "workspace_change", Column: "data", Value: personID},
			},
			answers: func(ctx context.Context) string {
				return getAll(srv.URL, read, "/api/workspaces/acme/gitlab/projects?size=100",
					"/api/workspaces/acme/gitlab/projects/101/merge-requests?size=100") + feedAnswer(ctx, feed, acme)
			},
			kept:            []string{personID, login, email},
			viewsNamePerson: true,
		})

		By("keeping the shared items and the others' words, with the tombstone where the person was")
		Expect(support.Column(ctx, pool, `SELECT path_with_namespace || ' ' || web_url FROM gitlab_project WHERE workspace_id = $1`, acme)).
			To(Equal([]string{"ghost/tools https://gitlab.example/ghost/tools"}), "the project keeps its id and name in the ghost's namespace")
		Expect(support.Column(ctx, pool, `SELECT body FROM gitlab_note WHERE workspace_id = $1`, acme)).To(Equal([]string{"@ghost looks good, thanks"}))
		Expect(support.Column(ctx, pool, `SELECT description FROM gitlab_issue WHERE workspace_id = $1 ORDER BY iid`, acme)).
			To(Equal([]string{"It crashes", "cc @ghost for review"}))
		Expect(support.Column(ctx, pool, `SELECT message FROM gitlab_commit WHERE workspace_id = $1 ORDER BY message`, acme)).
			To(Equal([]string{"Fix the crash\n", "Polish\n\nReviewed-by: Bo <bo@example.org>"}), "the trailers naming the person went, the others' stay")
	})
	It("in Outline: their documents' records (pages and webhooks), their mentions in documents, the read API and the feed", func(ctx SpecContext) {
		const (
			personID = "7c1f5c3e-5a5a-4d4d-8e8e-00000000abcd"
			name     = "Jane Roe"
			email    = "jane.roe@example.com"
			other    = "0a0b0c0d-1111-4222-8333-444455556666"
		)
		mention := fmt.Sprintf("@[%s](mention://5e5e5e5e-0000-4000-8000-000000000001/user/%s)", name, personID)
		ol := newFakeOutline()
		ol.collection(handbook, 2)
		ol.mu.Lock()
		ol.docs[handbook][0]["createdBy"] = obj{"id": personID, "name": name, "avatarUrl": "https://outline.example/a.png", "email": email}
		ol.docs[handbook][1]["text"] = "# Plan\n\nAsk " + mention + " first."
		ol.docs[handbook][1]["createdBy"] = obj{"id": other, "name": "Bo", "avatarUrl": "https://outline.example/b.png"}
		ol.mu.Unlock()
		acme := support.NewWorkspace(ctx, manage, "acme").ID
		source := ol.server.URL
		conn := outlineConnection(ctx, acme, source, outlineToken)
		store, err := outlinemirror.New(pool)
		Expect(err).NotTo(HaveOccurred())
		Expect(store.PublishChanges(feed, outlineread.Views{})).To(Succeed())
		tokens, err := managementstore.NewLiveSecrets(pool, box)
		Expect(err).NotTo(HaveOccurred())
		client, err := outlineapi.New(outlineapi.Config{BaseURL: source + "/api"})
		Expect(err).NotTo(HaveOccurred())
		src, err := outlinesync.New(client, tokens, store)
		Expect(err).NotTo(HaveOccurred())
		metrics := declaredMetrics("github", "gitlab", "slack", "outline")
		r := newRunner("server-a", jobs, metrics, src)
		subscribeCollection(ctx, acme, conn, handbook)
		drainRunner(ctx, r, func() bool { return collectionJob(ctx, conn, handbook).State == "DONE" })

		reg := outlineHandlers(store)
		update := func(envelope, actor, actorName, docID, text string) string {
			return fmt.Sprintf(`{"id":%q,"actorId":%q,"webhookSubscriptionId":"s-1","createdAt":"2024-07-01T10:00:00.000Z",
				"event":"documents.update","payload":{"id":%q,"model":{"id":%q,"collectionId":%q,"title":"Runbook","text":%q,
				"urlId":"rb","revision":5,"updatedAt":"2024-07-01T10:00:00.000Z",
				"createdBy":{"id":%q,"name":%q,"avatarUrl":"https://outline.example/x.png"},
				"updatedBy":{"id":%q,"name":%q,"avatarUrl":"https://outline.example/x.png"}}}}`,
				envelope, actor, docID, docID, handbook, text, actor, actorName, actor, actorName)
		}
		webhookOf(ctx, reg, acme, outline.Provider, source, "documents.update", "outline:document:rb-1",
			update("env-1", personID, name, "rb-1", "# Runbook\nmine"))
		webhookOf(ctx, reg, acme, outline.Provider, source, "documents.update", "outline:document:rb-2",
			update("env-2", other, "Bo", "rb-2", "# Oncall\nescalate to "+mention))

		srv, c := serve(
			func(e *gin.Engine) error {
				return outlineread.Register(e, outlineread.Config{Auth: manage, Members: members, Store: store, Log: support.Logger{}})
			},
		)
		read := &httpClient{c}

		prove(ctx, erasureProof{
			scope:  scopeFor(outline.Provider, source, personID, "", email),
			traces: []string{personID, name, email},
			before: []support.Trace{
				{Table: "outline_event", Column: "actor_id", Value: personID},
				{Table: "outline_document", Column: "text", Value: name},
				{Table: "outline_document", Column: "text", Value: personID},
				{Table: "provider_event", Column: "payload", Value: personID},
			},
			answers: func(ctx context.Context) string {
				return getAll(srv.URL, read, "/api/workspaces/acme/outline/documents?size=100") + feedAnswer(ctx, feed, acme)
			},
			kept: []string{personID, email},
		})

		By("keeping the documents, with the tombstone mention where the person was")
		Expect(support.Column(ctx, pool, `SELECT text FROM outline_document WHERE workspace_id = $1 AND text LIKE '%mention%' ORDER BY id`, acme)).
			To(ConsistOf("# Plan\n\nAsk @[erased](mention://5e5e5e5e-0000-4000-8000-000000000001/user/00000000-0000-0000-0000-000000000000) first.",
				"# Oncall\nescalate to @[erased](mention://5e5e5e5e-0000-4000-8000-000000000001/user/00000000-0000-0000-0000-000000000000)"))
	})
	It("in GitHub: their own repository's pages and the corpus webhooks, their commits and co-author trailers, their mentions, the subscription, the read API and the feed", func(ctx SpecContext) {
		const (
			personID = "21031067"
			login    = "Codertocat"
			email    = "21031067+Codertocat@users.noreply.github.com"
		)
		// GitHub's documented push payload: Codertocat pushes to their own Codertocat/Hello-World.
		raw, err := os.ReadFile(filepath.Join(support.GitHubCorpus(), "push", "payload.json"))
		Expect(err).NotTo(HaveOccurred())
		var push obj
		Expect(json.Unmarshal(raw, &push)).To(Succeed())
		repo := push["repository"].(obj)
		repoID := int64(repo["id"].(float64))
		Expect(repo["full_name"]).To(Equal("Codertocat/Hello-World"))

		gh := newFakeGitHub(patToken)
		person, octocat := user(21031067, login), user(583231, "octocat")
		mine := issue(900000, 900001, 1, "Crash on start", "2024-02-02T00:00:00Z")
		mine["user"], mine["html_url"] = person, "https://github.com/Codertocat/Hello-World/issues/1"
		theirs := issue(900000, 900002, 2, "Docs", "2024-02-02T00:00:00Z")
		theirs["user"], theirs["body"] = octocat, "cc @Codertocat, and thanks @octocat"
		theirs["assignees"] = []any{person}
		pull := pullRequest(900101, 3, fmt.Sprintf("%040x", 3))
		pull["user"], pull["html_url"] = person, "https://github.com/Codertocat/Hello-World/pull/3"
		pull["body"] = "Fixes #1\n\nCo-authored-by: Codertocat <" + email + ">"
		gh.add(&fakeRepo{repo: repo, issues: []obj{mine, theirs}, pulls: []obj{pull},
			labels: []obj{{"id": 900501, "name": "bug", "color": "d73a4a", "default": true}},
			milestones: []obj{{"id": 900801, "number": 1, "title": "v1", "state": "open", "creator": octocat,
				"created_at": "2024-01-05T00:00:00Z", "updated_at": "2024-01-06T00:00:00Z"}}})
		acme := support.NewWorkspace(ctx, manage, "acme").ID
		conn := patConnection(ctx, acme, patToken)
		subscribe(ctx, acme, conn, repoID, "Codertocat/Hello-World")
		a := newServer("server-a", pool, jobs, gh)
		drainUntil(ctx, a, func() bool { return job(ctx, conn, repoID).State == "DONE" })
		Expect(count(ctx, `SELECT count(*) FROM github_issue WHERE workspace_id = $1`, acme)).To(Equal(2), "the pages were mirrored")

		store, err := githubmirror.New(pool)
		Expect(err).NotTo(HaveOccurred())
		Expect(store.PublishChanges(feed, githubread.Views{})).To(Succeed())
		reg := githubHandlers(store)
		hook := func(event string, payload []byte) {
			GinkgoHelper()
			webhookOf(ctx, reg, acme, github.Provider, "https://github.com", event, fmt.Sprintf("github:repository:%d", repoID), string(payload))
		}
		hook("push", raw) // read in place, as GitHub sent it
		// Someone else's push of a commit the person co-authored, and their comment mentioning
		// the person, in the person's repository.
		other, err := json.Marshal(obj{"ref": "refs/heads/main", "before": push["after"], "after": fmt.Sprintf("%040x", 77),
			"repository": repo, "pusher": obj{"name": "octocat", "email": "octocat@github.com"}, "sender": octocat,
			"commits": []any{obj{"id": fmt.Sprintf("%040x", 77), "tree_id": fmt.Sprintf("%040x", 78), "distinct": true,
				"message":   "Polish\n\nCo-authored-by: Codertocat <" + email + ">\nReviewed-by: Mona <mona@example.org>",
				"timestamp": "2024-03-02T10:00:00Z", "url": "https://github.com/Codertocat/Hello-World/commit/" + fmt.Sprintf("%040x", 77),
				"author":    obj{"name": "octocat", "email": "octocat@github.com", "username": "octocat"},
				"committer": obj{"name": "octocat", "email": "octocat@github.com", "username": "octocat"},
				"added":     []any{}, "removed": []any{}, "modified": []any{"README.md"}}},
			"head_commit": nil})
		Expect(err).NotTo(HaveOccurred())
		hook("push", other)
		comment, err := json.Marshal(obj{"action": "created", "repository": repo, "sender": octocat, "issue": theirs,
			"comment": obj{"id": 900301, "body": "@Codertocat can you look?", "user": octocat,
				"html_url":   "https://github.com/Codertocat/Hello-World/issues/2#issuecomment-900301",
				"created_at": "2024-03-03T00:00:00Z", "updated_at": "2024-03-03T00:00:00Z"}})
		Expect(err).NotTo(HaveOccurred())
		hook("issue_comment", comment)

		// An organization backfill names the repository it is in by full name in its cursor
		// (org:<page>:<index>:<id>:<full name>|<the repository's cursor>): as one paused there.
		_, err = pool.Exec(ctx, `UPDATE sync_job SET cursor = $2 WHERE connection_id = $1`, conn,
			fmt.Sprintf("org:1:0:%d:Codertocat/Hello-World|issues:2", repoID))
		Expect(err).NotTo(HaveOccurred())

		base, read := api()
		prove(ctx, erasureProof{
			scope:  scopeFor(github.Provider, "https://github.com", personID, login, email),
			traces: []string{personID, login, email},
			before: []support.Trace{
				{Table: "github_repository", Column: "full_name", Value: login},
				{Table: "github_issue", Column: "author_id", Value: personID},
				{Table: "github_issue", Column: "body", Value: login},
				{Table: "github_commit", Column: "message", Value: email},
				{Table: "github_issue_comment", Column: "body", Value: login},
				{Table: "connection_subscription", Column: "name", Value: login},
				{Table: "sync_job", Column: "cursor", Value: login},
				{Table: "provider_event", Column: "payload", Value: email},
				{Table: "workspace_change", Column: "data", Value: login},
			},
			answers: func(ctx context.Context) string {
				id := fmt.Sprint(repoID)
				return getAll(base, read, "/api/workspaces/acme/repositories?size=100",
					"/api/workspaces/acme/repositories/"+id+"/issues?size=100", "/api/workspaces/acme/repositories/"+id+"/pulls?size=100",
					"/api/workspaces/acme/repositories/"+id+"/commits?size=100", fmt.Sprintf("/api/workspaces/acme/connections/%d/sync", conn)) +
					feedAnswer(ctx, feed, acme)
			},
			kept:            []string{personID, login, email},
			viewsNamePerson: true,
		})

		By("keeping the repository with its id and the ghost as its owner, and the others' words with the tombstone")
		Expect(support.Column(ctx, pool, `SELECT id || ' ' || full_name || ' ' || html_url || ' ' || owner_login FROM github_repository WHERE workspace_id = $1`, acme)).
			To(Equal([]string{fmt.Sprintf("%d ghost/Hello-World https://github.com/ghost/Hello-World ghost", repoID)}))
		Expect(support.Column(ctx, pool, `SELECT body FROM github_issue_comment WHERE workspace_id = $1`, acme)).To(Equal([]string{"@ghost can you look?"}))
		Expect(support.Column(ctx, pool, `SELECT body FROM github_issue WHERE workspace_id = $1 AND id = 900002`, acme)).
			To(Equal([]string{"cc @ghost, and thanks @octocat"}), "another person's mention stays")
		Expect(support.Column(ctx, pool, `SELECT message FROM github_commit WHERE workspace_id = $1 AND message LIKE 'Polish%'`, acme)).
			To(Equal([]string{"Polish\n\nReviewed-by: Mona <mona@example.org>"}))
		Expect(support.Column(ctx, pool, `SELECT name FROM connection_subscription WHERE connection_id = $1`, conn)).
			To(Equal([]string{""}), "the subscription keeps the repository's id; its backfill resolves the name by id")
		Expect(support.Column(ctx, pool, `SELECT cursor FROM sync_job WHERE connection_id = $1`, conn)).
			To(Equal([]string{fmt.Sprintf("org:1:0:%d:ghost/Hello-World|issues:2", repoID)}))
	})
})
