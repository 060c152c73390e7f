package slack_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/adapters/secrets"
	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/webapi"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// webAPIRecorder is an httptest Slack Web API that answers ok and records, per method, the
// Authorization header of each call.
type webAPIRecorder struct {
	*httptest.Server
	mu    sync.Mutex
	calls []string // "method Authorization"
}

func newWebAPIRecorder() *webAPIRecorder {
	f := &webAPIRecorder{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.calls = append(f.calls, r.URL.Path+" "+r.Header.Get("Authorization"))
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	DeferCleanup(f.Close)
	return f
}

func (f *webAPIRecorder) received() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

var _ = Describe("The Slack Web API token of each team", func() {
	var (
		box    *secrets.AESGCM
		fake   *webAPIRecorder
		stored webapi.StoredTokenFunc
	)

	BeforeEach(func() {
		box = support.SecretBox()
		fake = newWebAPIRecorder()
		live, err := managementstore.NewLiveSecrets(harness.Pool, box)
		Expect(err).NotTo(HaveOccurred())
		// The same glue as bootstrap's provideSlackHandlers.
		stored = func(ctx context.Context, ws int64, team string) (string, bool, error) {
			token, found, err := live.LiveSecret(ctx, ws, slack.Kind, team)
			return string(token), found, err
		}
	})

	// registryWith registers the Slack handlers with a real Web API client at the fake, whose
	// static fallback token is fallback ("" for none).
	registryWith := func(fallback string) *consumer.Registry {
		GinkgoHelper()
		transport := &http.Transport{}
		DeferCleanup(transport.CloseIdleConnections)
		client, err := webapi.New(webapi.Config{BaseURL: fake.URL + "/api/", HTTP: &http.Client{Transport: transport},
			Token: webapi.StoredTokens(stored, fallback)})
		Expect(err).NotTo(HaveOccurred())
		reg := consumer.NewRegistry()
		Expect(slackhandlers.Register(reg, slackhandlers.Deps{Inbox: harness.Inbox, Store: store, Notifier: client, Log: support.Logger{}})).To(Succeed())
		return reg
	}

	// sealedSlackConnection stores an ACTIVE SLACK connection of team whose secret is token
	// sealed, as the install flow leaves it.
	sealedSlackConnection := func(ctx context.Context, ws int64, team, token string) int64 {
		GinkgoHelper()
		id := slackConnection(ctx, ws, team, "ACTIVE")
		sealed, err := box.Seal(id, []byte(token))
		Expect(err).NotTo(HaveOccurred())
		_, err = harness.Pool.Exec(ctx, `UPDATE connection SET secret_ciphertext = $2 WHERE id = $1`, id, sealed)
		Expect(err).NotTo(HaveOccurred())
		return id
	}

	openHome := func(ctx context.Context, reg *consumer.Registry, ws int64, team string) {
		GinkgoHelper()
		d := harness.Leased(ctx, ws, "app_home_opened", "slack:team:"+team, callback(team,
			`{"type":"app_home_opened","user":"U1","channel":"D1","tab":"home"}`))
		Expect(d.Handle(ctx, reg)).To(Succeed())
	}

	It("calls with the bot token each team's connection stores, and the static token only for a connection that stores none", func(ctx SpecContext) {
		acme, globex, initech := harness.NewWorkspace(ctx, "acme"), harness.NewWorkspace(ctx, "globex"), harness.NewWorkspace(ctx, "initech")
		sealedSlackConnection(ctx, acme, "T1ACME", "xoxb-acme-bot")
		sealedSlackConnection(ctx, globex, "T2GLOBEX", "xoxb-globex-bot")
		slackConnection(ctx, initech, "T3INITECH", "ACTIVE") // created by the instance administrator without a token

		reg := registryWith("xoxb-static-fallback")
		openHome(ctx, reg, acme, "T1ACME")
		openHome(ctx, reg, globex, "T2GLOBEX")
		openHome(ctx, reg, initech, "T3INITECH")

		Expect(fake.received()).To(Equal([]string{
			"/api/views.publish Bearer xoxb-acme-bot",
			"/api/views.publish Bearer xoxb-globex-bot",
			"/api/views.publish Bearer xoxb-static-fallback",
		}))
	})

	It("never uses another workspace's token for a team, nor the token of an UNINSTALLED connection", func(ctx SpecContext) {
		acme, globex := harness.NewWorkspace(ctx, "acme"), harness.NewWorkspace(ctx, "globex")
		sealedSlackConnection(ctx, acme, "T1ACME", "xoxb-acme-bot")
		old := sealedSlackConnection(ctx, globex, "T2GLOBEX", "xoxb-globex-old")
		_, err := harness.Pool.Exec(ctx, `UPDATE connection SET state = 'UNINSTALLED' WHERE id = $1`, old)
		Expect(err).NotTo(HaveOccurred())

		reg := registryWith("")
		// A globex row naming acme's team (globex has no connection of it) and a globex row of
		// its uninstalled team: neither has a token, so neither is called.
		openHome(ctx, reg, globex, "T1ACME")
		openHome(ctx, reg, globex, "T2GLOBEX")
		Expect(fake.received()).To(BeEmpty())

		openHome(ctx, reg, acme, "T1ACME")
		Expect(fake.received()).To(Equal([]string{"/api/views.publish Bearer xoxb-acme-bot"}))
	})

	It("makes no Web API call for a team without a token when no static token is configured", func(ctx SpecContext) {
		ws := harness.NewWorkspace(ctx, "acme")
		slackConnection(ctx, ws, "T1ACME", "ACTIVE")
		openHome(ctx, registryWith(""), ws, "T1ACME")
		Expect(fake.received()).To(BeEmpty())
	})
})
