package webapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/slack/webapi"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

// fakeSlack is an httptest Slack that answers every call with status and answer and records
// what it was sent.
type fakeSlack struct {
	*httptest.Server
	mu    sync.Mutex
	calls []call
}

type call struct {
	Path, Auth string
	Body       map[string]any
}

func newFakeSlack(status int, answer string) *fakeSlack {
	f := &fakeSlack{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		f.mu.Lock()
		f.calls = append(f.calls, call{Path: r.URL.Path, Auth: r.Header.Get("Authorization"), Body: body})
		f.mu.Unlock()
		w.WriteHeader(status)
		_, _ = io.WriteString(w, answer)
	}))
	DeferCleanup(f.Close)
	return f
}

func (f *fakeSlack) received() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

func clientOf(base string) *webapi.Client {
	GinkgoHelper()
	transport := &http.Transport{}
	DeferCleanup(transport.CloseIdleConnections)
	c, err := webapi.New(webapi.Config{
		BaseURL: base,
		HTTP:    &http.Client{Transport: transport},
		Token:   func(_ context.Context, _ int64, team string) (string, error) { return "xoxb-" + team, nil },
	})
	Expect(err).NotTo(HaveOccurred())
	return c
}

var _ = Describe("Slack Web API client", func() {
	It("posts the ephemeral notice with the team's bot token", func(ctx SpecContext) {
		slack := newFakeSlack(200, `{"ok":true}`)
		Expect(clientOf(slack.URL).PostEphemeral(ctx, 1, "T1", "C1", "U1", "hello")).To(Succeed())
		Expect(slack.received()).To(Equal([]call{{
			Path: "/chat.postEphemeral", Auth: "Bearer xoxb-T1",
			Body: map[string]any{"channel": "C1", "user": "U1", "text": "hello"},
		}}))
	})

	It("publishes the App Home view", func(ctx SpecContext) {
		slack := newFakeSlack(200, `{"ok":true}`)
		Expect(clientOf(slack.URL).PublishHome(ctx, 1, "T1", "U1", json.RawMessage(`{"type":"home","blocks":[]}`))).To(Succeed())
		got := slack.received()
		Expect(got).To(HaveLen(1))
		Expect(got[0].Path).To(Equal("/views.publish"))
		Expect(got[0].Body).To(Equal(map[string]any{"user_id": "U1", "view": map[string]any{"type": "home", "blocks": []any{}}}))
	})

	DescribeTable("classifies server errors and rate limits as transient",
		func(ctx SpecContext, status int, answer string) {
			slack := newFakeSlack(status, answer)
			err := clientOf(slack.URL).PostEphemeral(ctx, 1, "T1", "C1", "U1", "x")
			Expect(inbox.Classify(err)).To(Equal(inbox.Retryable))
		},
		Entry("a 503", 503, ``),
		Entry("a 429", 429, ``),
		Entry("Slack's ratelimited code", 200, `{"ok":false,"error":"ratelimited"}`),
	)

	It("waits at least the Retry-After of Slack's 429", func(ctx SpecContext) {
		slack := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(http.StatusTooManyRequests)
		}))
		DeferCleanup(slack.Close)
		err := clientOf(slack.URL).PublishHome(ctx, 1, "T1", "U1", json.RawMessage(`{"type":"home","blocks":[]}`))
		var perr *inbox.ProviderError
		Expect(errors.As(err, &perr)).To(BeTrue(), "%v", err)
		Expect(perr.Kind).To(Equal(inbox.ProviderRateLimited))
		Expect(perr.RetryAfter).To(Equal(30 * time.Second))
		Expect(inbox.CauseOf(err)).To(Equal(inbox.CauseProviderRateLimit))
	})

	It("classifies a transport failure as transient", func(ctx SpecContext) {
		slack := newFakeSlack(200, `{"ok":true}`)
		slack.Close()
		err := clientOf(slack.URL).PostEphemeral(ctx, 1, "T1", "C1", "U1", "x")
		Expect(inbox.Classify(err)).To(Equal(inbox.Retryable))
	})

	It("returns Slack's refusal as an APIError that is not transient", func(ctx SpecContext) {
		slack := newFakeSlack(200, `{"ok":false,"error":"channel_not_found"}`)
		err := clientOf(slack.URL).PostEphemeral(ctx, 1, "T1", "C1", "U1", "x")
		var apiErr *webapi.APIError
		Expect(errors.As(err, &apiErr)).To(BeTrue())
		Expect(apiErr.Code).To(Equal("channel_not_found"))
		Expect(inbox.Classify(err)).To(Equal(inbox.Unknown))
	})

	It("refuses a configuration without a token function", func() {
		_, err := webapi.New(webapi.Config{})
		Expect(err).To(HaveOccurred())
	})
})
