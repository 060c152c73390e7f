package tracing_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// dashboardPath is the Grafana dashboard operators import (docs/operations).
var dashboardPath = filepath.Join("..", "..", "docs", "operations", "grafana-dashboard.json")

// selectorName is a metric name in a PromQL query: every query of the dashboard writes its
// metrics with a selector (`name{instance=~"$instance"}`), which is what tells a metric from a
// function or a label.
var selectorName = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{`)

// dashboardQueries are the PromQL queries of every panel and of the template variables.
func dashboardQueries() []string {
	GinkgoHelper()
	raw, err := os.ReadFile(dashboardPath)
	Expect(err).NotTo(HaveOccurred())
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Type       string `json:"type"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	Expect(json.Unmarshal(raw, &d)).To(Succeed())
	var out []string
	for _, p := range d.Panels {
		for _, t := range p.Targets {
			Expect(t.Expr).NotTo(BeEmpty(), "panel %q", p.Title)
			out = append(out, t.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			// label_values(metric, label) names its metric without a selector.
			out = append(out, v.Definition)
		}
	}
	return out
}

// exported reads /metrics of a running server: the sample names, and the service's own metric
// families (not the Go runtime's, the process's or the handler's own).
func exported(ctx context.Context, s *server) (samples map[string]bool, families []string) {
	GinkgoHelper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.Base+"/metrics", nil)
	Expect(err).NotTo(HaveOccurred())
	resp, err := hc.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
	samples = map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, _, _ := strings.Cut(rest, " ")
			if !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") && !strings.HasPrefix(name, "promhttp_") {
				families = append(families, name)
			}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name := line[:strings.IndexAny(line, "{ ")]
		samples[name] = true
	}
	Expect(sc.Err()).NotTo(HaveOccurred())
	sort.Strings(families)
	return samples, families
}

var _ = Describe("The Grafana dashboard", Ordered, func() {
	var (
		samples  map[string]bool
		families []string
		queries  []string
	)
	BeforeAll(func(ctx SpecContext) {
		in := newInstance(ctx)
		s := in.start("server-dashboard", nil, nil)
		samples, families = exported(ctx, s)
		queries = dashboardQueries()
		Expect(queries).NotTo(BeEmpty())
	})

	It("names in its queries only metrics a running server exports on /metrics", func() {
		for _, q := range queries {
			names := selectorName.FindAllStringSubmatch(q, -1)
			if strings.HasPrefix(q, "label_values(") {
				metric, _, _ := strings.Cut(strings.TrimPrefix(q, "label_values("), ",")
				names = append(names, []string{"", strings.TrimSpace(metric)})
			}
			Expect(names).NotTo(BeEmpty(), "query %q names no metric with a selector", q)
			for _, n := range names {
				Expect(samples).To(HaveKey(n[1]), "query %q", q)
			}
		}
	})

	It("shows every metric the service exports", func() {
		used := map[string]bool{}
		for _, q := range queries {
			for _, n := range selectorName.FindAllStringSubmatch(q, -1) {
				used[n[1]] = true
			}
		}
		Expect(families).To(ContainElements("webhook_received_total", "integration_consumer_handler_seconds",
			"integration_inbox_oldest_queued_age_seconds", "sync_items_total", "integration_change_feed_waiting_clients"))
		for _, f := range families {
			Expect(used[f] || used[f+"_bucket"] || used[f+"_count"]).To(BeTrue(), "no panel shows %s", f)
		}
	})
})
