package changes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/gin-gonic/gin"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmirror"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

var _ = Describe("Connection state changes in the change feed", func() {
	const installationID = 4711
	var (
		feed        *changefeed.Store
		conns       *managementstore.Connections
		svc         *management.Service
		url         string
		client      *http.Client
		acme, other int64
		acmeConn    int64
		otherConn   int64
		woken       *atomic.Int64 // the feed's in-process wakes after a commit
	)

	appConnection := func(ctx context.Context, ws, installation int64) int64 {
		GinkgoHelper()
		var id int64
		Expect(writerPool.QueryRow(ctx, `
			INSERT INTO connection (workspace_id, kind, provider, state, source_server_url, config, source_key)
			VALUES ($1, 'GITHUB_APP', 'GITHUB', 'ACTIVE', 'https://github.com', jsonb_build_object('installationId', $2::bigint), $2::text)
			RETURNING id`, ws, installation).Scan(&id)).To(Succeed())
		return id
	}

	BeforeEach(func(ctx SpecContext) {
		workspaces, err := managementstore.NewWorkspaces(writerPool)
		Expect(err).NotTo(HaveOccurred())
		conns, err = managementstore.NewConnections(writerPool, managementstore.Config{Kinds: []connection.Kind{github.KindApp}})
		Expect(err).NotTo(HaveOccurred())
		svc, err = management.New(management.Config{AdminToken: adminToken}, workspaces, workspaces, conns, support.SecretBox(), nil)
		Expect(err).NotTo(HaveOccurred())
		woken = &atomic.Int64{}
		feed, err = changefeed.New(writerPool, func() { woken.Add(1) })
		Expect(err).NotTo(HaveOccurred())
		Expect(conns.PublishChanges(feed, managementapi.ConnectionView(svc))).To(Succeed())

		gin.SetMode(gin.TestMode)
		engine := gin.New()
		managementapi.Register(engine, svc, support.Logger{})
		server, c := support.Serve(engine)
		url, client = server.URL, c

		acme = support.NewWorkspace(ctx, svc, "acme").ID
		other = support.NewWorkspace(ctx, svc, "other").ID
		acmeConn = appConnection(ctx, acme, installationID)
		otherConn = appConnection(ctx, other, installationID+1)
	})

	// transition posts a lifecycle action as the instance administrator and returns the
	// status and the body.
	transition := func(slug string, id int64, action string) (int, []byte) {
		GinkgoHelper()
		req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/api/workspaces/%s/connections/%d/%s", url, slug, id, action), nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Authorization", "Bearer "+adminToken)
		res, err := client.Do(req)
		Expect(err).NotTo(HaveOccurred())
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		Expect(err).NotTo(HaveOccurred())
		return res.StatusCode, body
	}
	all := func(ctx context.Context, ws int64) []change.Stored {
		GinkgoHelper()
		page, err := feed.Changes(ctx, ws, change.Cursor{}, 100)
		Expect(err).NotTo(HaveOccurred())
		return page
	}
	stateOf := func(c change.Stored) string {
		GinkgoHelper()
		var data struct{ State string }
		Expect(json.Unmarshal(c.Data, &data)).To(Succeed())
		return data.State
	}

	When("the management API suspends and then activates a connection", func() {
		It("publishes two connection.state_changed changes, in order, each with the connection as the API answered it, and wakes the feed after each commit", func(ctx SpecContext) {
			status, suspended := transition("acme", acmeConn, "suspend")
			Expect(status).To(Equal(http.StatusOK), string(suspended))
			status, activated := transition("acme", acmeConn, "activate")
			Expect(status).To(Equal(http.StatusOK), string(activated))

			cs := all(ctx, acme)
			Expect(cs).To(HaveLen(2))
			subject := "connection:" + strconv.FormatInt(acmeConn, 10)
			for _, c := range cs {
				Expect(c.Type).To(Equal("connection.state_changed"))
				Expect(c.Subject).To(Equal(subject))
			}
			Expect([]string{stateOf(cs[0]), stateOf(cs[1])}).To(Equal([]string{"SUSPENDED", "ACTIVE"}))
			Expect(entity(cs[0].Data)).To(MatchJSON(suspended))
			Expect(entity(cs[1].Data)).To(MatchJSON(activated))
			Expect(woken.Load()).To(Equal(int64(2)))

			By("each carries the database clock of its transition as its version, the later transition the greater one")
			versions := []string{}
			for _, c := range cs {
				var d map[string]any
				Expect(json.Unmarshal(c.Data, &d)).To(Succeed())
				Expect(d["version"]).To(MatchRegexp(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`))
				versions = append(versions, d["version"].(string))
			}
			Expect(versions[1] > versions[0]).To(BeTrue(), "%v", versions)
		})
	})

	When("a transition is refused or repeated", func() {
		It("publishes nothing for it", func(ctx SpecContext) {
			status, body := transition("acme", acmeConn, "activate") // already ACTIVE
			Expect(status).To(Equal(http.StatusConflict), string(body))
			Expect(all(ctx, acme)).To(BeEmpty())

			status, body = transition("acme", acmeConn, "suspend")
			Expect(status).To(Equal(http.StatusOK), string(body))
			status, body = transition("acme", acmeConn, "suspend") // again
			Expect(status).To(Equal(http.StatusConflict), string(body))
			cs := all(ctx, acme)
			Expect(cs).To(HaveLen(1))
			Expect(stateOf(cs[0])).To(Equal("SUSPENDED"))
			Expect(woken.Load()).To(Equal(int64(1)), "only the committed change wakes the feed")
		})
	})

	When("another workspace's connection changes state", func() {
		It("is in that workspace's feed only", func(ctx SpecContext) {
			status, body := transition("other", otherConn, "uninstall")
			Expect(status).To(Equal(http.StatusOK), string(body))
			// The other workspace's connection id through this workspace is not found.
			status, body = transition("acme", otherConn, "suspend")
			Expect(status).To(Equal(http.StatusNotFound), string(body))

			Expect(all(ctx, acme)).To(BeEmpty())
			cs := all(ctx, other)
			Expect(cs).To(HaveLen(1))
			Expect(cs[0].Subject).To(Equal("connection:" + strconv.FormatInt(otherConn, 10)))
			Expect(stateOf(cs[0])).To(Equal("UNINSTALLED"))
		})
	})

	When("the GitHub installation handler uninstalls the App connection", func() {
		It("publishes one connection.state_changed in its step, and a rerun of the delivery publishes nothing new", func(ctx SpecContext) {
			mirror, err := githubmirror.New(writerPool)
			Expect(err).NotTo(HaveOccurred())
			Expect(mirror.PublishConnectionStates(conns)).To(Succeed())
			box, err := deliveryinbox.New(writerPool)
			Expect(err).NotTo(HaveOccurred())
			reg := consumer.NewRegistry()
			Expect(githubhandlers.Register(reg, githubhandlers.Deps{Inbox: box, Store: mirror, Log: support.Logger{}})).To(Succeed())

			d := support.LeasedEvent(ctx, writerPool, 0, github.Provider, "installation", "github:spec", ghBody(obj{
				"action": "deleted",
				"installation": obj{"id": installationID, "account": ghUser(99, "acme-org"), "repository_selection": "selected",
					"target_type": "Organization", "app_id": 1, "updated_at": 1_700_000_300},
			}))
			Expect(d.Handle(ctx, reg)).To(Succeed())

			cs := all(ctx, acme)
			Expect(cs).To(HaveLen(1))
			Expect(cs[0].Type).To(Equal("connection.state_changed"))
			Expect(cs[0].Subject).To(Equal("connection:" + strconv.FormatInt(acmeConn, 10)))
			stored, err := conns.Connection(ctx, acme, acmeConn)
			Expect(err).NotTo(HaveOccurred())
			Expect(stored.State).To(Equal(connection.Uninstalled))
			shown, err := json.Marshal(managementapi.ConnectionView(svc)(stored))
			Expect(err).NotTo(HaveOccurred())
			Expect(entity(cs[0].Data)).To(MatchJSON(shown))
			Expect(all(ctx, other)).To(BeEmpty())

			d.NextLease(ctx)
			Expect(d.Handle(ctx, reg)).To(Succeed())
			Expect(all(ctx, acme)).To(HaveLen(1))
		})
	})
})

var _ = Describe("Slack's uninstall in the change feed", func() {
	const team = "T0SPEC001"
	var (
		feed  *changefeed.Store
		conns *managementstore.Connections
		reg   *consumer.Registry
		ws    int64
		conn  int64
	)

	BeforeEach(func(ctx SpecContext) {
		ws = support.Workspace(ctx, writerPool, "acme")
		Expect(writerPool.QueryRow(ctx, `
			INSERT INTO connection (workspace_id, kind, provider, state, source_server_url, config, source_key)
			VALUES ($1, 'SLACK', 'SLACK', 'ACTIVE', 'https://slack.com', jsonb_build_object('teamId', $2::text), $2)
			RETURNING id`, ws, team).Scan(&conn)).To(Succeed())
		var err error
		conns, err = managementstore.NewConnections(writerPool, managementstore.Config{Kinds: []connection.Kind{slack.Kind}})
		Expect(err).NotTo(HaveOccurred())
		workspaces, err := managementstore.NewWorkspaces(writerPool)
		Expect(err).NotTo(HaveOccurred())
		svc, err := management.New(management.Config{AdminToken: adminToken}, workspaces, workspaces, conns, support.SecretBox(), nil)
		Expect(err).NotTo(HaveOccurred())
		feed, err = changefeed.New(writerPool, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(conns.PublishChanges(feed, managementapi.ConnectionView(svc))).To(Succeed())
		mirror, err := slackmirror.New(writerPool)
		Expect(err).NotTo(HaveOccurred())
		Expect(mirror.PublishConnectionStates(conns)).To(Succeed())
		box, err := deliveryinbox.New(writerPool)
		Expect(err).NotTo(HaveOccurred())
		reg = consumer.NewRegistry()
		Expect(slackhandlers.Register(reg, slackhandlers.Deps{Inbox: box, Store: mirror, Log: support.Logger{}})).To(Succeed())
	})

	It("publishes one connection.state_changed to UNINSTALLED for app_uninstalled, and nothing for a second one", func(ctx SpecContext) {
		uninstalled := func(n int) support.Delivery {
			GinkgoHelper()
			d := support.LeasedEvent(ctx, writerPool, ws, slack.Provider, "app_uninstalled", "slack:team:"+team, fmt.Sprintf(
				`{"type":"event_callback","team_id":%q,"event_id":"EvSpec%d","authorizations":[{"team_id":%q,"user_id":"UBOT","is_bot":true}],"event":{"type":"app_uninstalled"}}`,
				team, n, team))
			Expect(d.Handle(ctx, reg)).To(Succeed())
			return d
		}
		uninstalled(1)
		uninstalled(2)
		cs, err := feed.Changes(ctx, ws, change.Cursor{}, 100)
		Expect(err).NotTo(HaveOccurred())
		Expect(cs).To(HaveLen(1))
		Expect(cs[0].Type).To(Equal("connection.state_changed"))
		Expect(cs[0].Subject).To(Equal("connection:" + strconv.FormatInt(conn, 10)))
		Expect(string(cs[0].Data)).To(ContainSubstring(`"state": "UNINSTALLED"`))
	})
})
