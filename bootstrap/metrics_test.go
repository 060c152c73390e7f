package bootstrap

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"

	"github.com/hephaestus-dev/hephaestus/application/admission"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// scrape reads /metrics into series ("name{label="value",…}", labels sorted by name, as the
// Prometheus text format writes them) and their values.
func scrape(url string) map[string]string {
	GinkgoHelper()
	resp, err := client.Get(url)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	Expect(resp.StatusCode).To(Equal(200))
	series := map[string]string{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		series[line[:i]] = line[i+1:]
	}
	Expect(sc.Err()).NotTo(HaveOccurred())
	return series
}

var _ = Describe("Metrics of a fresh server", func() {
	It("exports every labelled counter at 0 for each provider and each reason, cause and outcome the service can record", func(ctx SpecContext) {
		leaks := goleak.IgnoreCurrent()
		DeferCleanup(func() {
			Eventually(func() error { return goleak.Find(leaks) }).WithTimeout(10 * time.Second).Should(Succeed())
		})
		db, err := pgtest.NewDatabase(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) { Expect(db.Drop(ctx)).To(Succeed()) })
		addr := freeAddr()
		cfg, err := LoadConfig(func(name string) string {
			return map[string]string{
				EnvDatabaseURL:    db.URL,
				EnvHTTPAddr:       addr,
				EnvAdminToken:     "admin-token-for-the-specs",
				EnvCredentialsKey: base64.StdEncoding.EncodeToString(make([]byte, 32)),
			}[name]
		})
		Expect(err).NotTo(HaveOccurred())
		series := scrape(runApp(cfg) + "/metrics")
		zero := func(name string, labels ...string) {
			GinkgoHelper()
			var pairs []string
			for i := 0; i < len(labels); i += 2 {
				pairs = append(pairs, fmt.Sprintf("%s=%q", labels[i], labels[i+1]))
			}
			key := name
			if len(pairs) > 0 {
				key += "{" + strings.Join(pairs, ",") + "}"
			}
			Expect(series).To(HaveKeyWithValue(key, "0"), "%s is on /metrics at 0", key)
		}

		// The label sets come from the declarations: the wired modules, the failure table, the
		// outcomes and drop reasons of the domain, admission's and each provider's reasons.
		modules := provideModules(providerModules(cfg))
		Expect(modules).To(HaveLen(4))
		for _, m := range modules {
			p := m.Provider().Label()
			zero("webhook_received_total", "provider", p)
			for _, o := range inbox.Outcomes() {
				zero("integration_consumer_handled_total", "outcome", o.String(), "provider", p)
			}
			for _, c := range inbox.RetryCauses() {
				zero("integration_consumer_retry_total", "cause", c.String(), "provider", p)
			}
			for _, r := range inbox.DropReasons() {
				zero("integration_message_dropped_total", "provider", p, "reason", r)
			}
			reasoner, ok := m.(contract.RejectionReasoner)
			Expect(ok).To(BeTrue(), "%s declares its refusal reasons", p)
			reasons := append(append(admission.Reasons(), inbox.PayloadReasons()...), reasoner.RejectionReasons()...)
			for _, r := range reasons {
				zero("webhook_rejected_total", "provider", p, "reason", r)
			}
		}

		// Spelled out, so the spec fails if a declaration went empty.
		zero("integration_consumer_retry_total", "cause", "contention", "provider", "github")
		zero("integration_consumer_retry_total", "cause", "database-conflict", "provider", "gitlab")
		zero("integration_consumer_retry_total", "cause", "provider-rate-limit", "provider", "slack")
		zero("integration_consumer_retry_total", "cause", "lease-expired", "provider", "outline")
		zero("integration_message_dropped_total", "provider", "github", "reason", "erased-during-processing")
		zero("integration_message_dropped_total", "provider", "slack", "reason", "lease-lost")
		zero("integration_consumer_handled_total", "outcome", "dead", "provider", "gitlab")
		zero("webhook_rejected_total", "provider", "github", "reason", "work-event-without-source")
		zero("webhook_rejected_total", "provider", "gitlab", "reason", "bad-token")
		zero("webhook_rejected_total", "provider", "outline", "reason", "stale-timestamp")
		zero("webhook_rejected_total", "provider", "slack", "reason", "nul")
		zero("integration_consumer_inbox_retention_failures_total")
	})
})
