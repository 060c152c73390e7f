package bootstrap

import (
	"context"
	"encoding/base64"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/zap"

	"github.com/hephaestus-dev/hephaestus/adapters/providerkit"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// runApp runs an App of cfg until the spec ends and answers its base URL once it is ready.
func runApp(cfg Config) string {
	GinkgoHelper()
	app, err := InitializeApp(cfg, zap.NewNop())
	Expect(err).NotTo(HaveOccurred())
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(runCtx) }()
	DeferCleanup(func() { cancel(); Eventually(done).WithTimeout(30 * time.Second).Should(Receive(BeNil())) })
	base := "http://" + cfg.HTTPAddr
	Eventually(func() (int, error) { return get(base + "/readyz") }).WithTimeout(30 * time.Second).Should(Equal(200))
	return base
}

// harnessModule is a module a spec brings itself: one of the listed modules, counting its builds.
type harnessModule struct {
	providerkit.Module
	builds *atomic.Int32
}

func (m harnessModule) Build(deps providerkit.Deps) (contract.Provider, error) {
	m.builds.Add(1)
	return m.Module.Build(deps)
}

var _ = Describe("The provider modules of a server", func() {
	It("are Config.Modules: a harness replaces or extends the list without editing bootstrap", func(ctx SpecContext) {
		db, err := pgtest.NewDatabase(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) { Expect(db.Drop(ctx)).To(Succeed()) })
		vars := map[string]string{EnvDatabaseURL: db.URL, EnvHTTPAddr: freeAddr(), EnvAdminToken: "admin-token-for-the-module-spec",
			EnvCredentialsKey: base64.StdEncoding.EncodeToString(make([]byte, 32))}
		cfg, err := LoadConfig(func(name string) string { return vars[name] })
		Expect(err).NotTo(HaveOccurred())
		Expect(len(cfg.Modules)).To(BeNumerically(">", 1))
		// The first module stays: admission needs the namespace of installation events
		// (contract.InstallationSource) that only it has.
		kept, left := cfg.Modules[0], cfg.Modules[1]
		builds := new(atomic.Int32)
		cfg.Modules = []providerkit.Module{harnessModule{Module: kept, builds: builds}}

		series := scrape(runApp(cfg) + "/metrics")
		Expect(builds.Load()).To(Equal(int32(1)), "the harness's module is built once")
		Expect(series).To(HaveKeyWithValue(`webhook_received_total{provider="`+kept.Provider().Label()+`"}`, "0"))
		Expect(series).NotTo(HaveKey(`webhook_received_total{provider="`+left.Provider().Label()+`"}`),
			"a module left out of the list is not served")
	})
})
