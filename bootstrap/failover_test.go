package bootstrap

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
)

var _ = Describe("A multi-host DATABASE_URL where no host accepts writes", func() {
	It("starts, says not ready, logs the hosts it tried, and becomes ready when one accepts writes", func(ctx SpecContext) {
		leaks := goleak.IgnoreCurrent()
		DeferCleanup(func() {
			Eventually(func() error { return goleak.Find(leaks) }).WithTimeout(10 * time.Second).Should(Succeed())
		})
		db, err := pgtest.NewDatabase(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) { Expect(db.Drop(ctx)).To(Succeed()) })
		admin, err := pgx.Connect(ctx, os.Getenv(pgtest.EnvAdminURL))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = admin.Close(context.Background()) })
		// The only live host is read-only, as a standby whose primary is gone: pgx refuses its
		// sessions under target_session_attrs=read-write.
		_, err = admin.Exec(ctx, "ALTER DATABASE "+db.Name+" SET default_transaction_read_only = on")
		Expect(err).NotTo(HaveOccurred())

		gone := freeAddr() // nothing listens there: the lost primary
		u, err := url.Parse(db.URL)
		Expect(err).NotTo(HaveOccurred())
		live := u.Host
		u.Host = gone + "," + live
		q := u.Query()
		q.Set("target_session_attrs", "read-write")
		u.RawQuery = q.Encode()

		addr := freeAddr()
		base := "http://" + addr
		cfg, err := LoadConfig(func(name string) string {
			return map[string]string{
				EnvDatabaseURL:    u.String(),
				EnvHTTPAddr:       addr,
				EnvAdminToken:     "admin-token-for-the-specs",
				EnvCredentialsKey: base64.StdEncoding.EncodeToString(make([]byte, 32)),
			}[name]
		})
		Expect(err).NotTo(HaveOccurred())
		core, logs := observer.New(zap.WarnLevel)
		app, err := InitializeApp(cfg, zap.New(core))
		Expect(err).NotTo(HaveOccurred())
		runCtx, cancel := context.WithCancel(context.Background())
		result := make(chan error, 1)
		done := make(chan struct{})
		go func() { defer close(done); result <- app.Run(runCtx) }()
		DeferCleanup(func() { cancel(); Eventually(done).WithTimeout(30 * time.Second).Should(BeClosed()) })

		Eventually(func() (int, error) { return get(base + "/readyz") }).WithTimeout(20 * time.Second).Should(Equal(503))
		Expect(get(base + "/healthz")).To(Equal(200))
		resp, err := client.Post(base+"/webhooks/github", "application/json", strings.NewReader(`{}`))
		Expect(err).NotTo(HaveOccurred())
		_ = resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusServiceUnavailable))
		Expect(resp.Header.Get("Retry-After")).NotTo(BeEmpty())

		waited := logs.FilterMessage("no database host accepts writes yet; waiting for one").All()
		Expect(waited).NotTo(BeEmpty())
		fields := waited[0].ContextMap()
		Expect(fields["hosts"]).To(ConsistOf(gone, live))
		Expect(fields["error"]).To(ContainSubstring("read only connection"))
		Expect(fields["error"]).To(ContainSubstring(gone))
		Expect(fields["error"]).NotTo(ContainSubstring(":" + passwordOf(db.URL) + "@"))
		Consistently(result).WithTimeout(time.Second).ShouldNot(Receive(), "the start waits instead of failing")

		// The standby is promoted: the host accepts writes.
		_, err = admin.Exec(ctx, "ALTER DATABASE "+db.Name+" RESET default_transaction_read_only")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() (int, error) { return get(base + "/readyz") }).WithTimeout(30 * time.Second).Should(Equal(200))
		cancel()
		Eventually(result).WithTimeout(30 * time.Second).Should(Receive(BeNil()))
	})
})

func passwordOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return "\x00"
	}
	p, ok := u.User.Password()
	if !ok || p == "" {
		return "\x00"
	}
	return p
}

var _ = Describe("Readiness on a host that accepts no writes", func() {
	It("is not ready on a read-only session (a standby, or a primary being demoted)", func(ctx SpecContext) {
		db, err := pgtest.NewDatabase(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) { Expect(db.Drop(ctx)).To(Succeed()) })
		cfg, err := pgxpool.ParseConfig(db.URL)
		Expect(err).NotTo(HaveOccurred())
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		Expect(err).NotTo(HaveOccurred())
		d := &database{pool: pool, sqlDB: stdlib.OpenDBFromPool(pool), server: &dbServer{}}
		DeferCleanup(func() { _ = d.close() })
		Expect(d.ready(ctx)).To(MatchError(ContainSubstring("accepts no writes")))
	})
})
