package beacon_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/zap"

	"github.com/hephaestus-dev/hephaestus/adapters/beacon/beaconmodule"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit"
	"github.com/hephaestus-dev/hephaestus/bootstrap"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
)

// The whole server with Beacon: bootstrap's configuration with the module list plus Beacon's
// module (the registration line), on a database with Beacon's migration. A signed delivery
// posted to the connection's hook is admitted, handled by the running claimers into the
// mirror, and shown by the read API; nothing here calls a handler or claims a row itself.
var _ = Describe("Beacon deliveries through the running server", Ordered, func() {
	const adminToken = "beacon-e2e-admin-token-0123456789"
	var (
		base  string
		srvDB *pgxpool.Pool
		hc    = &http.Client{Timeout: 10 * time.Second}
	)

	BeforeAll(func(ctx SpecContext) {
		db, err := pgtest.NewDatabase(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) { Expect(db.Drop(ctx)).To(Succeed()) })
		srvDB, err = pgxpool.New(ctx, db.URL)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srvDB.Close)
		migrate(ctx, srvDB)

		key := make([]byte, 32)
		_, _ = rand.Read(key)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		addr := ln.Addr().String()
		Expect(ln.Close()).To(Succeed())
		env := map[string]string{
			bootstrap.EnvDatabaseURL:      db.URL,
			bootstrap.EnvHTTPAddr:         addr,
			bootstrap.EnvAdminToken:       adminToken,
			bootstrap.EnvCredentialsKey:   base64.StdEncoding.EncodeToString(key),
			bootstrap.EnvPollInterval:     "200ms",
			beaconmodule.EnvMaxTitleBytes: "11",
		}
		getenv := func(name string) string { return env[name] }
		cfg, err := bootstrap.LoadConfig(getenv)
		Expect(err).NotTo(HaveOccurred())
		// The registration line: for a real provider, providerkit.Load(beaconmodule.LoadConfig,
		// beaconmodule.New) in adapters/providers; here appended to the server's list.
		beaconModule, err := providerkit.Load(beaconmodule.LoadConfig, beaconmodule.New)(providerkit.Env{Getenv: getenv})
		Expect(err).NotTo(HaveOccurred())
		cfg.Modules = append(cfg.Modules, beaconModule)

		app, err := bootstrap.InitializeApp(cfg, zap.NewNop())
		Expect(err).NotTo(HaveOccurred())
		appCtx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- app.Run(appCtx) }()
		DeferCleanup(func() {
			stop()
			Eventually(done).WithTimeout(60*time.Second).Should(Receive(BeNil()), "the server stops cleanly")
		})
		base = "http://" + addr
		Eventually(func() int {
			resp, err := hc.Get(base + "/readyz")
			if err != nil {
				return 0
			}
			_ = resp.Body.Close()
			return resp.StatusCode
		}).WithTimeout(60 * time.Second).WithPolling(50 * time.Millisecond).Should(Equal(http.StatusOK))
	})

	// send is one request to the server with the bearer token ("" for none) and extra headers;
	// it answers the status and the body.
	send := func(ctx context.Context, method, path, token string, body []byte, headers ...string) (int, string) {
		GinkgoHelper()
		req, err := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(body))
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := hc.Do(req)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		answer, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		return resp.StatusCode, string(answer)
	}
	create := func(ctx context.Context, path string, body any) map[string]any {
		GinkgoHelper()
		raw, err := json.Marshal(body)
		Expect(err).NotTo(HaveOccurred())
		status, answer := send(ctx, http.MethodPost, path, adminToken, raw)
		Expect(status).To(Equal(http.StatusCreated), answer)
		out := map[string]any{}
		Expect(json.Unmarshal([]byte(answer), &out)).To(Succeed())
		return out
	}

	It("admits a signed delivery on the connection's hook (202), mirrors it, shows it through the read API, and tears it down when the connection is uninstalled", func(ctx SpecContext) {
		create(ctx, "/api/admin/workspaces", map[string]string{"slug": "acme", "name": "Acme"})
		c := create(ctx, "/api/workspaces/acme/connections", map[string]any{
			"kind": "BEACON", "sourceServerUrl": beaconSource, "config": map[string]any{}, "secret": signingSecret})
		hook, _ := c["webhookUrl"].(string)
		Expect(hook).To(MatchRegexp(`^/webhooks/beacon/[0-9]+$`))

		body := []byte(incident("dlv_e2e_1", "incident.opened", "Checkout is down"))
		status, answer := send(ctx, http.MethodPost, hook, "", body, "Beacon-Signature", signature(body, false))
		Expect(status).To(Equal(http.StatusUnauthorized), "a delivery signed with another secret: %s", answer)
		status, answer = send(ctx, http.MethodPost, hook, "", body, "Beacon-Signature", signature(body, true))
		Expect(status).To(Equal(http.StatusAccepted), answer)

		Eventually(func(ctx context.Context) (string, error) {
			var title string
			err := srvDB.QueryRow(ctx, `SELECT coalesce(max(title), '') FROM beacon_incident WHERE id = 'inc_42'`).Scan(&title)
			return title, err
		}).WithContext(ctx).WithTimeout(30*time.Second).WithPolling(50*time.Millisecond).
			Should(Equal("Checkout is"), "the running claimers mirrored it, its title cut to HEPHAESTUS_BEACON_MAX_TITLE_BYTES")

		status, answer = send(ctx, http.MethodGet, "/api/workspaces/acme/beacon/incidents", "", nil)
		Expect(status).To(Equal(http.StatusUnauthorized), answer)
		status, answer = send(ctx, http.MethodGet, "/api/workspaces/acme/beacon/incidents", adminToken, nil)
		Expect(status).To(Equal(http.StatusOK), answer)
		var list struct {
			Items []map[string]any `json:"items"`
			Total int              `json:"total"`
		}
		Expect(json.Unmarshal([]byte(answer), &list)).To(Succeed())
		Expect(list.Total).To(Equal(1))
		Expect(list.Items[0]).To(HaveKeyWithValue("id", "inc_42"))
		Expect(list.Items[0]).To(HaveKeyWithValue("title", "Checkout is"))
		Expect(list.Items[0]).To(HaveKeyWithValue("authorName", authorName))

		// Uninstalling the connection queues its teardown job, which the running server's job
		// runner pages through Beacon's teardown source.
		status, answer = send(ctx, http.MethodPost, "/api/workspaces/acme/connections/"+strconv.FormatInt(int64(c["id"].(float64)), 10)+"/uninstall", adminToken, []byte(`{}`))
		Expect(status).To(Equal(http.StatusOK), answer)
		Eventually(func(ctx context.Context) (int, error) {
			var n int
			err := srvDB.QueryRow(ctx, `SELECT count(*) FROM beacon_incident`).Scan(&n)
			return n, err
		}).WithContext(ctx).WithTimeout(30*time.Second).WithPolling(100*time.Millisecond).Should(BeZero(), "the teardown removed the mirror")
	})
})
