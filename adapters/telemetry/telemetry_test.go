package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// scrape returns the exposition text of m's /metrics handler.
func scrape(m *telemetry.Metrics) string {
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	ExpectWithOffset(1, rec.Code).To(Equal(200))
	body, err := io.ReadAll(rec.Body)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return string(body)
}

var _ = Describe("Metrics", func() {
	var m *telemetry.Metrics
	BeforeEach(func() { m = telemetry.NewMetrics() })

	It("exposes the inbox gauge of every state and the retention failure counter before any event", func() {
		text := scrape(m)
		for _, s := range []string{"QUEUED", "LEASED", "DONE", "DEAD"} {
			Expect(text).To(ContainSubstring(`integration_inbox_rows{state="` + s + `"} 0`))
		}
		Expect(text).To(ContainSubstring("integration_consumer_inbox_retention_failures_total 0"))
	})

	It("exposes each admission metric by its contract name after one call", func() {
		var a ports.AdmissionMetrics = m
		a.Received("github")
		a.Rejected("slack", "bad-signature")
		text := scrape(m)
		Expect(text).To(ContainSubstring(`webhook_received_total{provider="github"} 1`))
		Expect(text).To(ContainSubstring(`webhook_rejected_total{provider="slack",reason="bad-signature"} 1`))
	})

	It("exposes each consumer metric by its contract name after one call", func() {
		var c ports.ConsumerMetrics = m
		c.Handled("github", "done")
		c.Retried("gitlab", "contention")
		c.Dropped("outline", "lease-lost")
		c.RetentionFailed()
		c.HandlerDuration(context.Background(), "github", 1500*time.Millisecond)
		c.InboxRows("DEAD", 7)
		c.OldestQueuedAge(90 * time.Second)
		text := scrape(m)
		Expect(text).To(ContainSubstring(`integration_consumer_handled_total{outcome="done",provider="github"} 1`))
		Expect(text).To(ContainSubstring(`integration_consumer_retry_total{cause="contention",provider="gitlab"} 1`))
		Expect(text).To(ContainSubstring(`integration_message_dropped_total{provider="outline",reason="lease-lost"} 1`))
		Expect(text).To(ContainSubstring("integration_consumer_inbox_retention_failures_total 1"))
		Expect(text).To(ContainSubstring(`integration_consumer_handler_seconds_bucket{provider="github",le="2.5"} 1`))
		Expect(text).To(ContainSubstring(`integration_consumer_handler_seconds_sum{provider="github"} 1.5`))
		Expect(text).To(ContainSubstring(`integration_consumer_handler_seconds_count{provider="github"} 1`))
		Expect(text).To(ContainSubstring("# TYPE integration_consumer_handler_seconds histogram"))
		Expect(text).To(ContainSubstring("# TYPE integration_inbox_rows gauge"))
		Expect(text).To(ContainSubstring(`integration_inbox_rows{state="DEAD"} 7`))
		Expect(text).To(ContainSubstring("# TYPE integration_inbox_oldest_queued_age_seconds gauge"))
		Expect(text).To(ContainSubstring("integration_inbox_oldest_queued_age_seconds 90"))
	})

	It("keeps each server's metrics in its own registry", func() {
		other := telemetry.NewMetrics()
		m.Received("github")
		Expect(scrape(other)).NotTo(ContainSubstring("webhook_received_total{"))
	})
})

var _ = Describe("Logger", func() {
	It("writes one JSON object per line in json format", func() {
		var buf bytes.Buffer
		log, err := telemetry.NewLoggerTo(&buf, "json", "info")
		Expect(err).NotTo(HaveOccurred())
		log.Sugar().Infow("claimed", "rows", 3)
		var line map[string]any
		Expect(json.Unmarshal(buf.Bytes(), &line)).To(Succeed())
		Expect(line).To(HaveKeyWithValue("msg", "claimed"))
		Expect(line).To(HaveKeyWithValue("level", "info"))
		Expect(line).To(HaveKeyWithValue("rows", BeNumerically("==", 3)))
		Expect(line).To(HaveKey("time"))
	})

	It("writes human-readable lines in console format", func() {
		var buf bytes.Buffer
		log, err := telemetry.NewLoggerTo(&buf, "console", "info")
		Expect(err).NotTo(HaveOccurred())
		log.Info("serving")
		Expect(strings.HasPrefix(buf.String(), "{")).To(BeFalse())
		Expect(buf.String()).To(ContainSubstring("INFO"))
		Expect(buf.String()).To(ContainSubstring("serving"))
	})

	It("drops lines below the level", func() {
		var buf bytes.Buffer
		log, err := telemetry.NewLoggerTo(&buf, "json", "warn")
		Expect(err).NotTo(HaveOccurred())
		log.Info("quiet")
		log.Warn("loud")
		Expect(buf.String()).NotTo(ContainSubstring("quiet"))
		Expect(buf.String()).To(ContainSubstring("loud"))
	})

	It("refuses an unknown format or level", func() {
		_, err := telemetry.NewLogger("xml", "info")
		Expect(err).To(MatchError(ContainSubstring("xml")))
		_, err = telemetry.NewLogger("json", "loud")
		Expect(err).To(HaveOccurred())
	})
})
