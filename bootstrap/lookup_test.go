package bootstrap

import (
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/zap"

	"github.com/hephaestus-dev/hephaestus/adapters/http/server"
	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
)

// Unauthenticated per-connection webhooks read their connection before verifying; a flood of
// random ids and tokens must not reach the pool the claimers and the renewer use.
var _ = Describe("Webhook connection lookups", func() {
	It("run on a pool of their own: a flood of random ids and tokens takes no connection of the main pool", func(ctx SpecContext) {
		tdb, err := pgtest.NewDatabase(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) { Expect(tdb.Drop(ctx)).To(Succeed()) })
		cfg, err := LoadConfig(func(name string) string {
			return map[string]string{
				EnvDatabaseURL:    tdb.URL,
				EnvAdminToken:     "admin-token-for-the-specs",
				EnvCredentialsKey: base64.StdEncoding.EncodeToString(make([]byte, 32)),
			}[name]
		})
		Expect(err).NotTo(HaveOccurred())
		secrets, err := resolveSecrets(cfg, zap.NewNop(), GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		db, err := openDatabase(ctx, cfg, zap.NewNop(), nil)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(db.close()).To(Succeed()) })
		Expect(db.lookup.Config().MaxConns).To(Equal(int32(LookupPoolSize)))
		// The operator reads' pool: its own size and its sessions' statement timeout (ms).
		Expect(db.reads.Config().MaxConns).To(Equal(int32(DefaultOperatorReadConns)))
		Expect(db.reads.Config().ConnConfig.RuntimeParams).To(HaveKeyWithValue("statement_timeout", "5000"))

		// A real connection among the random ids, so some lookups find a row and open a secret.
		var ws, conn int64
		Expect(db.pool.QueryRow(ctx, `INSERT INTO workspace (slug, name) VALUES ('acme', 'Acme') RETURNING id`).Scan(&ws)).To(Succeed())
		Expect(db.pool.QueryRow(ctx, `INSERT INTO connection (workspace_id, kind, provider, source_server_url)
			VALUES ($1, 'GITLAB', 'GITLAB', 'https://gitlab.example') RETURNING id`, ws).Scan(&conn)).To(Succeed())

		svc, cleanup, err := buildServices(ctx, graphInput{Config: cfg, Secrets: secrets, Pool: db.pool,
			AdmissionPool: db.admission, LookupPool: db.lookup, ReadPool: db.reads, Log: zap.NewNop(), Metrics: telemetry.NewMetrics()})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(cleanup)
		srv, err := server.New(server.Config{Addr: "127.0.0.1:0"}, zap.NewNop(), db.ready, http.NotFoundHandler(), svc.registrars...)
		Expect(err).NotTo(HaveOccurred())

		mainBefore := db.pool.Stat().AcquireCount()
		lookupBefore := db.lookup.Stat().AcquireCount()
		var wg sync.WaitGroup
		statuses := make(chan int, 400)
		for g := range 8 {
			wg.Go(func() {
				defer GinkgoRecover()
				rng := rand.New(rand.NewPCG(uint64(g), 13))
				for i := range 50 {
					id := rng.Int64N(1 << 40)
					path := fmt.Sprintf("/webhooks/gitlab/%d", id)
					if i%5 == 0 {
						path = fmt.Sprintf("/webhooks/gitlab/%d", conn)
					}
					if i%2 == 1 {
						path = strings.Replace(path, "gitlab", "outline", 1)
					}
					req := httptest.NewRequestWithContext(context.Background(), http.MethodPost, path, strings.NewReader(`{"object_kind":"push"}`))
					req.Header.Set("X-Gitlab-Token", fmt.Sprintf("random-%d", rng.Int64()))
					req.Header.Set("Outline-Signature", fmt.Sprintf("t=1,s=%x", rng.Int64()))
					rec := httptest.NewRecorder()
					srv.Handler().ServeHTTP(rec, req)
					statuses <- rec.Code
				}
			})
		}
		wg.Wait()
		close(statuses)
		for code := range statuses {
			Expect(code).To(BeElementOf(http.StatusNotFound, http.StatusUnauthorized), "a flood is refused, never a 500")
		}
		Expect(db.lookup.Stat().AcquireCount()-lookupBefore).To(BeNumerically(">=", 300), "the lookups ran on their own pool")
		Expect(db.pool.Stat().AcquireCount()).To(Equal(mainBefore), "and took no connection of the claimers' and renewer's pool")
	})
})
