package changes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

var _ = Describe("What the change feed shows of connections", func() {
	var (
		srv          *feedServer
		svc          *management.Service
		apiURL       string
		apiClient    *http.Client
		acme         int64
		mia, ann     string // acme's MEMBER and ADMIN
		connectionID = map[string]int64{}
	)

	// insertConnection stores an ACTIVE connection of kind with config (and, for a kind that
	// takes one, an API token) as the management API would.
	insertConnection := func(ctx context.Context, kind, provider, config, sourceKey string) int64 {
		GinkgoHelper()
		var id int64
		Expect(writerPool.QueryRow(ctx, `
			INSERT INTO connection (workspace_id, kind, provider, state, source_server_url, config, source_key, api_token_ciphertext)
			VALUES ($1, $2, $3, 'ACTIVE', 'https://'||lower($3)||'.example.com', $4::jsonb, nullif($5, ''),
			        CASE WHEN $2 = 'OUTLINE' THEN '\x00'::bytea END)
			RETURNING id`, acme, kind, provider, config, sourceKey).Scan(&id)).To(Succeed())
		return id
	}
	// suspend suspends a connection through the management API (which publishes its
	// connection.state_changed) as the instance administrator.
	suspend := func(id int64) {
		GinkgoHelper()
		req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/api/workspaces/acme/connections/%d/suspend", apiURL, id), nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Authorization", "Bearer "+adminToken)
		res, err := apiClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Body.Close()).To(Succeed())
		Expect(res.StatusCode).To(Equal(http.StatusOK))
	}
	// connectionsAsAdmin is GET /connections as acme's ADMIN: each connection's JSON by id.
	connectionsAsAdmin := func() map[float64]map[string]any {
		GinkgoHelper()
		r := support.GetJSON(apiClient, apiURL+"/api/workspaces/acme/connections", ann)
		Expect(r.Status).To(Equal(http.StatusOK), fmt.Sprint(r.JSON))
		out := map[float64]map[string]any{}
		for _, it := range r.JSON["items"].([]any) {
			c := it.(map[string]any)
			out[c["id"].(float64)] = c
		}
		return out
	}
	// connectionData is the data of each connection.state_changed change of a feed answer.
	connectionData := func(cs []map[string]any) []map[string]any {
		GinkgoHelper()
		var out []map[string]any
		for _, c := range cs {
			if c["type"] == "connection.state_changed" {
				out = append(out, c["data"].(map[string]any))
			}
		}
		Expect(out).To(HaveLen(3), "one change per connection")
		return out
	}
	// memberSafe: exactly the id, provider, state and version of a connection.
	memberSafe := func(data map[string]any) {
		GinkgoHelper()
		Expect(data).To(HaveLen(4), fmt.Sprint(data))
		Expect(data).To(SatisfyAll(HaveKey("id"), HaveKey("provider"), HaveKeyWithValue("state", "SUSPENDED"), HaveKey("version")))
		raw, err := json.Marshal(data)
		Expect(err).NotTo(HaveOccurred())
		for _, secret := range []string{"T0TEAM", "A0APP", "groupId", "webhooks", "example.com"} {
			Expect(string(raw)).NotTo(ContainSubstring(secret))
		}
	}
	// whole: the data is the connection exactly as GET /connections shows it to an ADMIN.
	whole := func(data map[string]any, shown map[float64]map[string]any) {
		GinkgoHelper()
		want, ok := shown[data["id"].(float64)]
		Expect(ok).To(BeTrue())
		got := map[string]any{}
		for k, v := range data {
			if k != "version" {
				got[k] = v
			}
		}
		Expect(got).To(Equal(want))
	}

	BeforeEach(func(ctx SpecContext) {
		srv = newFeedServer(100*time.Millisecond, 16)
		workspaces, err := managementstore.NewWorkspaces(writerPool)
		Expect(err).NotTo(HaveOccurred())
		conns, err := managementstore.NewConnections(writerPool,
			managementstore.Config{Kinds: []connection.Kind{slack.Kind, gitlab.Kind, outline.Kind}})
		Expect(err).NotTo(HaveOccurred())
		svc, err = management.New(management.Config{AdminToken: adminToken}, workspaces, workspaces, conns, support.SecretBox(), nil)
		Expect(err).NotTo(HaveOccurred())
		pub, err := changefeed.New(writerPool, srv.signal.Notify)
		Expect(err).NotTo(HaveOccurred())
		Expect(conns.PublishChanges(pub, managementapi.ConnectionView(svc))).To(Succeed())
		gin.SetMode(gin.TestMode)
		engine := gin.New()
		managementapi.Register(engine, svc, support.Logger{})
		server, client := support.Serve(engine)
		apiURL, apiClient = server.URL, client

		acme = support.NewWorkspace(ctx, svc, "acme").ID
		mia = support.NewAccount(ctx, svc, "mia", false, "acme", "MEMBER").Token
		ann = support.NewAccount(ctx, svc, "ann", false, "acme", "ADMIN").Token
		connectionID["SLACK"] = insertConnection(ctx, "SLACK", "SLACK", `{"teamId":"T0TEAM","appId":"A0APP"}`, "T0TEAM")
		connectionID["GITLAB"] = insertConnection(ctx, "GITLAB", "GITLAB", `{"groupId":42}`, "")
		connectionID["OUTLINE"] = insertConnection(ctx, "OUTLINE", "OUTLINE", `{}`, "")
		for _, kind := range []string{"SLACK", "GITLAB", "OUTLINE"} {
			suspend(connectionID[kind])
		}
	})

	It("shows a MEMBER, who may not list the connections, only their id, provider, state and version, by long poll and stream", func(ctx SpecContext) {
		Expect(support.GetJSON(apiClient, apiURL+"/api/workspaces/acme/connections", mia).Status).To(Equal(http.StatusForbidden))

		for _, data := range connectionData(changeList(srv.get("/api/workspaces/acme/changes?wait=10s", mia))) {
			memberSafe(data)
		}

		events, closeStream := openFeedStream(ctx, srv, mia)
		DeferCleanup(closeStream)
		for range 3 {
			var e sseEvent
			Eventually(events).WithTimeout(10 * time.Second).Should(Receive(&e))
			Expect(e.data).To(HaveKeyWithValue("type", "connection.state_changed"))
			memberSafe(e.data["data"].(map[string]any))
		}
	})

	It("shows an ADMIN and the instance administrator each connection as GET /connections shows it, configuration, webhook URL and API token included", func(ctx SpecContext) {
		shown := connectionsAsAdmin()
		Expect(shown[float64(connectionID["SLACK"])]).To(HaveKeyWithValue("config", HaveKeyWithValue("teamId", "T0TEAM")))
		Expect(shown[float64(connectionID["GITLAB"])]).To(HaveKey("webhookUrl"))
		Expect(shown[float64(connectionID["OUTLINE"])]).To(HaveKeyWithValue("hasApiToken", true))
		for _, token := range []string{ann, adminToken} {
			for _, data := range connectionData(changeList(srv.get("/api/workspaces/acme/changes", token))) {
				whole(data, shown)
			}
			events, closeStream := openFeedStream(ctx, srv, token)
			for range 3 {
				var e sseEvent
				Eventually(events).WithTimeout(10 * time.Second).Should(Receive(&e))
				whole(e.data["data"].(map[string]any), shown)
			}
			closeStream()
		}
	})

	It("follows a role change at the next read: a demoted ADMIN sees the MEMBER view, a promoted MEMBER the whole", func(ctx SpecContext) {
		shown := connectionsAsAdmin()
		m, err := svc.Manage(ctx, support.InstanceAdmin, "acme")
		Expect(err).NotTo(HaveOccurred())
		annID, err := svc.Authenticate(ctx, ann)
		Expect(err).NotTo(HaveOccurred())
		miaID, err := svc.Authenticate(ctx, mia)
		Expect(err).NotTo(HaveOccurred())
		_, err = svc.SetMemberRole(ctx, m, miaID.AccountID, "ADMIN")
		Expect(err).NotTo(HaveOccurred())
		_, err = svc.SetMemberRole(ctx, m, annID.AccountID, "MEMBER")
		Expect(err).NotTo(HaveOccurred())

		for _, data := range connectionData(changeList(srv.get("/api/workspaces/acme/changes", ann))) {
			memberSafe(data)
		}
		for _, data := range connectionData(changeList(srv.get("/api/workspaces/acme/changes", mia))) {
			whole(data, shown)
		}
	})

	It("keeps a change's id, cursor, type and subject the same for every reader", func() {
		member := changeList(srv.get("/api/workspaces/acme/changes", mia))
		admin := changeList(srv.get("/api/workspaces/acme/changes", ann))
		Expect(member).To(HaveLen(len(admin)))
		for i := range member {
			for _, k := range []string{"id", "cursor", "type", "subject", "occurredAt"} {
				Expect(member[i][k]).To(Equal(admin[i][k]), k)
			}
		}
		Expect(admin[0]["subject"]).To(Equal("connection:" + strconv.FormatInt(connectionID["SLACK"], 10)))
	})
})

// openFeedStream opens acme's feed as Server-Sent Events from the start with token.
func openFeedStream(ctx context.Context, srv *feedServer, token string) (<-chan sseEvent, func()) {
	GinkgoHelper()
	ctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.url+"/api/workspaces/acme/changes", nil)
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	res, err := srv.client.Do(req)
	Expect(err).NotTo(HaveOccurred())
	Expect(res.StatusCode).To(Equal(http.StatusOK))
	return sseEvents(res.Body), func() { cancel(); _ = res.Body.Close() }
}
