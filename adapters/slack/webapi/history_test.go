package webapi_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/slack/webapi"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

var _ = Describe("conversations.history", func() {
	It("posts channel, limit and cursor form encoded with the team's bot token and returns Slack's answer", func(ctx SpecContext) {
		var got url.Values
		var auth, contentType string
		slack := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			Expect(r.URL.Path).To(Equal("/conversations.history"))
			Expect(r.ParseForm()).To(Succeed())
			got, auth, contentType = r.PostForm, r.Header.Get("Authorization"), r.Header.Get("Content-Type")
			_, _ = w.Write([]byte(`{"ok":true,"messages":[],"response_metadata":{"next_cursor":""}}`))
		}))
		DeferCleanup(slack.Close)
		body, err := clientOf(slack.URL).ConversationsHistory(ctx, 1, "T1", "C1", "dXNlcjpVMDYx", 100)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(body)).To(Equal(`{"ok":true,"messages":[],"response_metadata":{"next_cursor":""}}`))
		Expect(got).To(Equal(url.Values{"channel": {"C1"}, "limit": {"100"}, "cursor": {"dXNlcjpVMDYx"}}))
		Expect(auth).To(Equal("Bearer xoxb-T1"))
		Expect(contentType).To(Equal("application/x-www-form-urlencoded"))
	})

	It("sends no cursor for the first page", func(ctx SpecContext) {
		var got url.Values
		slack := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			Expect(r.ParseForm()).To(Succeed())
			got = r.PostForm
			_, _ = w.Write([]byte(`{"ok":true,"messages":[]}`))
		}))
		DeferCleanup(slack.Close)
		_, err := clientOf(slack.URL).ConversationsHistory(ctx, 1, "T1", "C1", "", 100)
		Expect(err).NotTo(HaveOccurred())
		Expect(got).NotTo(HaveKey("cursor"))
	})

	DescribeTable("refuses a token Slack does not accept",
		func(ctx SpecContext, code string) {
			slack := newFakeSlack(200, `{"ok":false,"error":"`+code+`"}`)
			_, err := clientOf(slack.URL).ConversationsHistory(ctx, 1, "T1", "C1", "", 100)
			var perr *inbox.ProviderError
			Expect(errors.As(err, &perr)).To(BeTrue(), "%v", err)
			Expect(perr.Kind).To(Equal(inbox.ProviderRefused))
			Expect(inbox.CauseOf(err)).To(Equal(inbox.CauseProviderRefused))
			Expect(err.Error()).NotTo(ContainSubstring("xoxb"))
		},
		Entry("not_authed", "not_authed"),
		Entry("invalid_auth", "invalid_auth"),
		Entry("token_revoked", "token_revoked"),
	)

	It("is refused, without a call, for a team without a bot token", func(ctx SpecContext) {
		slack := newFakeSlack(200, `{"ok":true}`)
		c, err := webapi.New(webapi.Config{BaseURL: slack.URL,
			Token: func(context.Context, int64, string) (string, error) { return "", webapi.ErrNoToken }})
		Expect(err).NotTo(HaveOccurred())
		_, err = c.ConversationsHistory(ctx, 1, "T1", "C1", "", 100)
		Expect(inbox.CauseOf(err)).To(Equal(inbox.CauseProviderRefused))
		Expect(slack.received()).To(BeEmpty())
	})
})

var _ = Describe("conversations.replies", func() {
	It("posts channel, the parent's ts, limit and cursor form encoded with the team's bot token", func(ctx SpecContext) {
		var got url.Values
		var auth string
		slack := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			Expect(r.URL.Path).To(Equal("/conversations.replies"))
			Expect(r.ParseForm()).To(Succeed())
			got, auth = r.PostForm, r.Header.Get("Authorization")
			_, _ = w.Write([]byte(`{"ok":true,"messages":[],"has_more":false}`))
		}))
		DeferCleanup(slack.Close)
		body, err := clientOf(slack.URL).ConversationsReplies(ctx, 1, "T1", "C1", "1700000000.000100", "cmVwbGllcw", 100)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(body)).To(Equal(`{"ok":true,"messages":[],"has_more":false}`))
		Expect(got).To(Equal(url.Values{"channel": {"C1"}, "ts": {"1700000000.000100"}, "limit": {"100"}, "cursor": {"cmVwbGllcw"}}))
		Expect(auth).To(Equal("Bearer xoxb-T1"))
	})

	It("names a parent Slack no longer has by its code", func(ctx SpecContext) {
		slack := newFakeSlack(200, `{"ok":false,"error":"thread_not_found"}`)
		_, err := clientOf(slack.URL).ConversationsReplies(ctx, 1, "T1", "C1", "1700000000.000100", "", 100)
		var apiErr *webapi.APIError
		Expect(errors.As(err, &apiErr)).To(BeTrue(), "%v", err)
		Expect(apiErr.Code).To(Equal(webapi.ThreadNotFound))
		Expect(inbox.CauseOf(err)).To(Equal(inbox.CauseProviderRefused))
	})
})
