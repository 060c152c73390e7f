package operators_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"gopkg.in/yaml.v3"

	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
)

// alertsFile is docs/operations/alerts.yml, from this package's directory.
var alertsFile = filepath.Join("..", "..", "docs", "operations", "alerts.yml")

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// promqlWords are PromQL's functions, aggregations and keywords that can appear in the rules;
// every other identifier outside label matchers and groupings is a metric name.
var promqlWords = map[string]bool{
	"sum": true, "min": true, "max": true, "avg": true, "count": true, "topk": true, "bottomk": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"and": true, "or": true, "unless": true, "offset": true, "bool": true,
	"rate": true, "irate": true, "increase": true, "delta": true, "deriv": true, "absent": true,
	"absent_over_time": true, "max_over_time": true, "min_over_time": true, "avg_over_time": true,
	"sum_over_time": true, "histogram_quantile": true, "time": true, "timestamp": true, "vector": true,
	"clamp_min": true, "clamp_max": true, "abs": true, "changes": true, "resets": true,
}

var (
	quoted     = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	matchers   = regexp.MustCompile(`\{[^}]*\}`)
	ranges     = regexp.MustCompile(`\[[^\]]*\]`)
	groupings  = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	identifier = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
)

// metricNames lists the metric names an expression reads.
func metricNames(expr string) []string {
	e := quoted.ReplaceAllString(expr, `""`)
	e = matchers.ReplaceAllString(e, " ")
	e = ranges.ReplaceAllString(e, " ")
	e = groupings.ReplaceAllString(e, " ")
	var out []string
	for _, w := range identifier.FindAllString(e, -1) {
		if !promqlWords[w] {
			out = append(out, w)
		}
	}
	return out
}

// exportedMetrics is what the telemetry adapter puts on /metrics once each metric has a
// sample, with the series names of histograms.
func exportedMetrics() map[string]bool {
	GinkgoHelper()
	m := telemetry.NewMetrics()
	m.Received("github")
	m.Rejected("github", "unverified")
	m.Handled("github", "dead")
	m.Retried("github", "busy")
	m.Dropped("github", "lease-lost")
	m.RetentionFailed()
	m.HandlerDuration(context.Background(), "github", time.Millisecond)
	m.InboxRows("QUEUED", 1)
	families, err := m.Registry().Gather()
	Expect(err).NotTo(HaveOccurred())
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
		if f.GetType().String() == "HISTOGRAM" {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				names[f.GetName()+suffix] = true
			}
		}
	}
	return names
}

var _ = Describe("The alert rules", func() {
	var rules ruleFile

	BeforeEach(func() {
		raw, err := os.ReadFile(alertsFile)
		Expect(err).NotTo(HaveOccurred())
		Expect(yaml.Unmarshal(raw, &rules)).To(Succeed())
	})

	It("parse, and every alert has an expression, a severity, a summary and a runbook section", func() {
		runbook, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations", "alert-response.md"))
		Expect(err).NotTo(HaveOccurred())
		var alerts []string
		for _, g := range rules.Groups {
			for _, r := range g.Rules {
				alerts = append(alerts, r.Alert)
				Expect(r.Alert).NotTo(BeEmpty())
				Expect(r.Expr).NotTo(BeEmpty(), r.Alert)
				Expect(r.Labels).To(HaveKeyWithValue("severity", BeElementOf("info", "warning", "critical")), r.Alert)
				Expect(r.Annotations).To(HaveKeyWithValue("summary", Not(BeEmpty())), r.Alert)
				anchor := strings.ToLower(r.Alert)
				Expect(r.Annotations).To(HaveKeyWithValue("runbook_url", HaveSuffix("alert-response.md#"+anchor)), r.Alert)
				Expect(string(runbook)).To(ContainSubstring("## "+r.Alert), "alert-response.md has a section per alert")
				if r.For != "" {
					_, err := time.ParseDuration(r.For)
					Expect(err).NotTo(HaveOccurred(), r.Alert)
				}
			}
		}
		Expect(alerts).To(ContainElements("IntegrationDeadRowsRising", "IntegrationInboxRetentionFailing",
			"IntegrationInboxBacklogGrowing", "WebhookRejectionSpike", "WebhookProviderQuiet"))
	})

	It("read only metrics the service exports", func() {
		exported := exportedMetrics()
		var used []string
		for _, g := range rules.Groups {
			for _, r := range g.Rules {
				names := metricNames(r.Expr)
				Expect(names).NotTo(BeEmpty(), r.Alert)
				used = append(used, names...)
			}
		}
		sort.Strings(used)
		for _, name := range used {
			Expect(exported).To(HaveKey(name), "%s is not exported by adapters/telemetry", name)
		}
	})

	It("can rely on every metric the contract promises, since the service exports each one", func() {
		// CONTRACT.md lists the metrics "at least" exported: each must be on /metrics (the
		// service may export more, such as integration_inbox_oldest_queued_age_seconds).
		contract, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "CONTRACT.md"))
		if err != nil {
			Skip("CONTRACT.md is not beside the checkout")
		}
		_, ops, found := strings.Cut(string(contract), "## Operations")
		Expect(found).To(BeTrue())
		ops, _, _ = strings.Cut(ops, "\n## ")
		promised := regexp.MustCompile("`((?:webhook|integration)_[a-z_]+)").FindAllStringSubmatch(ops, -1)
		Expect(promised).NotTo(BeEmpty())
		exported := exportedMetrics()
		for _, m := range promised {
			Expect(exported).To(HaveKey(m[1]), "CONTRACT.md promises %s", m[1])
		}
	})

	It("pass promtool's check and their unit tests when promtool is installed", func() {
		promtool, err := exec.LookPath("promtool")
		if err != nil {
			Skip("promtool is not on PATH; the YAML and metric checks above still ran")
		}
		out, err := exec.Command(promtool, "check", "rules", alertsFile).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		out, err = exec.Command(promtool, "test", "rules", filepath.Join(filepath.Dir(alertsFile), "alerts_test.yml")).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
	})

	It("extracts metric names, not labels, functions or groupings", func() {
		Expect(metricNames(`sum by (provider) (rate(webhook_rejected_total{reason!~"a|b"}[10m])) / sum by (provider) (rate(webhook_received_total[10m])) > 0.25`)).
			To(Equal([]string{"webhook_rejected_total", "webhook_received_total"}))
	})
})
