package bootstrap

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hephaestus-dev/hephaestus/internal/pgembedded"
)

var _ = Describe("The embedded default database", func() {
	It("serves without DATABASE_URL, keeps its data and admin token across restarts, and stops its cluster", func() {
		dataDir := filepath.Join(GinkgoT().TempDir(), "data")
		addr := freeAddr()
		cfg, err := LoadConfig(func(name string) string {
			return map[string]string{EnvDataDir: dataDir, EnvHTTPAddr: addr}[name]
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Embedded()).To(BeTrue())
		core, logs := observer.New(zapcore.InfoLevel)
		console := &bytes.Buffer{}
		clusterOpts := pgembedded.Options{DataDir: filepath.Join(dataDir, EmbeddedSubdir)}
		DeferCleanup(func(ctx SpecContext) {
			// Never leave a server behind, whatever failed.
			if c, err := pgembedded.Attach(clusterOpts); err == nil {
				_ = c.Stop(ctx)
			}
		})

		// createAcme creates workspace "acme" with the admin token of the data dir.
		createAcme := func() int {
			token, err := os.ReadFile(filepath.Join(dataDir, AdminTokenFile))
			Expect(err).NotTo(HaveOccurred())
			req, _ := http.NewRequest("POST", "http://"+addr+"/api/admin/workspaces", strings.NewReader(`{"slug":"acme","name":"Acme"}`))
			req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
			resp, err := client.Do(req)
			Expect(err).NotTo(HaveOccurred())
			_ = resp.Body.Close()
			return resp.StatusCode
		}

		serveOnce := func(whileServing func()) {
			app, err := InitializeApp(cfg, zap.New(core))
			Expect(err).NotTo(HaveOccurred())
			app.console = console
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			result := make(chan error, 1)
			go func() { result <- app.Run(ctx) }()
			Eventually(func() (int, error) { return get("http://" + addr + "/readyz") }).
				WithTimeout(90 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal(200))
			whileServing()
			cancel()
			Eventually(result).WithTimeout(2 * time.Minute).Should(Receive(BeNil()))
			_, err = pgembedded.Attach(clusterOpts)
			Expect(err).To(MatchError(pgembedded.ErrNotRunning), "the cluster is stopped with the server")
		}

		serveOnce(func() { Expect(createAcme()).To(Equal(201)) })
		token, err := os.ReadFile(filepath.Join(dataDir, AdminTokenFile))
		Expect(err).NotTo(HaveOccurred())
		Expect(console.String()).To(ContainSubstring(string(token[:len(token)-1])))
		Expect(logs.FilterField(zap.String("adminToken", string(token[:len(token)-1]))).Len()).To(BeZero(), "never in the structured log")

		serveOnce(func() { Expect(createAcme()).To(Equal(409), "the workspace survived the restart") })
		again, err := os.ReadFile(filepath.Join(dataDir, AdminTokenFile))
		Expect(err).NotTo(HaveOccurred())
		Expect(again).To(Equal(token))
		Expect(strings.Count(console.String(), string(token[:len(token)-1]))).To(Equal(1),
			"the token is shown at its generation only")
	})
})
