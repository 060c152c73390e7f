package outlineapi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlineapi"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

const token = "ol_api_s3cret"

var now = time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)

// serve answers every call with handler and returns a client of its /api root.
func serve(handler http.HandlerFunc, maxBody int64) *outlineapi.Client {
	GinkgoHelper()
	srv := httptest.NewServer(handler)
	DeferCleanup(srv.Close)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}
	DeferCleanup(hc.CloseIdleConnections)
	c, err := outlineapi.New(outlineapi.Config{BaseURL: srv.URL + "/api", HTTPClient: hc, MaxBodyBytes: maxBody,
		Now: func() time.Time { return now }})
	Expect(err).NotTo(HaveOccurred())
	return c
}

func providerError(err error) *inbox.ProviderError {
	GinkgoHelper()
	var pe *inbox.ProviderError
	Expect(errors.As(err, &pe)).To(BeTrue(), "%v is a provider error", err)
	Expect(err.Error()).NotTo(ContainSubstring(token))
	return pe
}

var _ = Describe("The Outline API client", func() {
	It("posts documents.list with the bearer token and the collection's page, and reads the page", func(ctx SpecContext) {
		var auth, path, body, contentType string
		c := serve(func(w http.ResponseWriter, r *http.Request) {
			raw, _ := io.ReadAll(r.Body)
			auth, path, body, contentType = r.Header.Get("Authorization"), r.Method+" "+r.URL.Path, string(raw), r.Header.Get("Content-Type")
			_, _ = io.WriteString(w, `{"ok":true,"data":[{"id":"d1"}],"pagination":{"offset":100,"limit":100,"nextPath":"/api/documents.list?limit=100&offset=200"}}`)
		}, 0)
		page, err := c.ListDocuments(ctx, token, "col-1", 100, 100)
		Expect(err).NotTo(HaveOccurred())
		Expect(auth).To(Equal("Bearer " + token))
		Expect(path).To(Equal("POST /api/documents.list"))
		Expect(contentType).To(Equal("application/json"))
		Expect(body).To(MatchJSON(`{"collectionId":"col-1","offset":100,"limit":100,"sort":"createdAt","direction":"ASC"}`))
		Expect(string(page.Documents)).To(Equal(`[{"id":"d1"}]`))
		Expect(page.HasNext).To(BeTrue())
	})

	It("reads a collection with collections.info and wants an object", func(ctx SpecContext) {
		var body string
		c := serve(func(w http.ResponseWriter, r *http.Request) {
			raw, _ := io.ReadAll(r.Body)
			body = r.URL.Path + " " + string(raw)
			_, _ = io.WriteString(w, `{"ok":true,"data":{"id":"col-1","name":"Handbook"}}`)
		}, 0)
		data, err := c.CollectionInfo(ctx, token, "col-1")
		Expect(err).NotTo(HaveOccurred())
		Expect(body).To(Equal(`/api/collections.info {"id":"col-1"}`))
		Expect(string(data)).To(Equal(`{"id":"col-1","name":"Handbook"}`))

		list := serve(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"ok":true,"data":[]}`) }, 0)
		_, err = list.CollectionInfo(ctx, token, "col-1")
		Expect(providerError(err).Kind).To(Equal(inbox.ProviderUnreadable))
	})

	It("sees no next page without a nextPath", func(ctx SpecContext) {
		c := serve(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, `{"ok":true,"data":[],"pagination":{"offset":0,"limit":100}}`)
		}, 0)
		page, err := c.ListDocuments(ctx, token, "col-1", 0, 100)
		Expect(err).NotTo(HaveOccurred())
		Expect(page.HasNext).To(BeFalse())
	})

	DescribeTable("classifies a failed call for the inbox's failure table",
		func(ctx SpecContext, status int, headers map[string]string, body string, kind inbox.ProviderFailure, wait time.Duration) {
			c := serve(func(w http.ResponseWriter, _ *http.Request) {
				for k, v := range headers {
					w.Header().Set(k, v)
				}
				w.WriteHeader(status)
				_, _ = io.WriteString(w, body)
			}, 0)
			_, err := c.ListDocuments(ctx, token, "col-1", 0, 100)
			pe := providerError(err)
			Expect(pe.Kind).To(Equal(kind))
			Expect(pe.RetryAfter).To(Equal(wait))
		},
		Entry("429 waits Retry-After, a fraction rounded up", 429, map[string]string{"Retry-After": "29.2"}, `{"ok":false}`,
			inbox.ProviderRateLimited, 30*time.Second),
		Entry("429 without Retry-After waits for RateLimit-Reset (a JavaScript date)", 429,
			map[string]string{"RateLimit-Reset": "Wed Dec 02 2026 03:01:00 GMT+0000 (Coordinated Universal Time)"}, `{}`,
			inbox.ProviderRateLimited, time.Minute),
		Entry("429 with RateLimit-Reset in Unix seconds", 429,
			map[string]string{"RateLimit-Reset": fmt.Sprint(now.Add(90 * time.Second).Unix())}, `{}`,
			inbox.ProviderRateLimited, 90*time.Second),
		Entry("503 is a server error, waiting its Retry-After", 503, map[string]string{"Retry-After": "5"}, ``,
			inbox.ProviderServerError, 5*time.Second),
		Entry("401 is refused", 401, nil, `{"ok":false,"error":"authentication_required"}`, inbox.ProviderRefused, time.Duration(0)),
		Entry("403 is refused", 403, nil, `{"ok":false,"error":"authorization_error"}`, inbox.ProviderRefused, time.Duration(0)),
		Entry("400 is refused", 400, nil, `{"ok":false,"error":"validation_error"}`, inbox.ProviderRefused, time.Duration(0)),
		Entry("a redirect is not followed", 302, map[string]string{"Location": "https://elsewhere.example/api/documents.list"}, ``,
			inbox.ProviderRefused, time.Duration(0)),
		Entry("a 200 that is not ok is unreadable", 200, nil, `{"ok":false}`, inbox.ProviderUnreadable, time.Duration(0)),
		Entry("a 200 without a list is unreadable", 200, nil, `{"ok":true,"data":{"id":"x"}}`, inbox.ProviderUnreadable, time.Duration(0)),
		Entry("a 200 that is not JSON is unreadable", 200, nil, `<html>`, inbox.ProviderUnreadable, time.Duration(0)),
	)

	It("refuses an answer larger than its bound as unreadable", func(ctx SpecContext) {
		c := serve(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, `{"ok":true,"data":["`+strings.Repeat("x", 2048)+`"]}`)
		}, 1024)
		_, err := c.ListDocuments(ctx, token, "col-1", 0, 100)
		Expect(providerError(err).Kind).To(Equal(inbox.ProviderUnreadable))
		Expect(errors.Is(err, outlineapi.ErrResponseTooLarge)).To(BeTrue())
	})

	It("is a transport failure when nobody answers", func(ctx SpecContext) {
		c, err := outlineapi.New(outlineapi.Config{BaseURL: "http://127.0.0.1:1/api"})
		Expect(err).NotTo(HaveOccurred())
		_, err = c.ListDocuments(context.WithoutCancel(ctx), token, "col-1", 0, 100)
		Expect(providerError(err).Kind).To(Equal(inbox.ProviderTransport))
	})

	It("tells a connection on its instance from one elsewhere (scheme, host and port)", func() {
		c, err := outlineapi.New(outlineapi.Config{BaseURL: "https://docs.example.com/api"})
		Expect(err).NotTo(HaveOccurred())
		Expect(c.SameInstance("https://docs.example.com")).To(BeTrue())
		Expect(c.SameInstance("https://DOCS.example.com:443/")).To(BeTrue())
		Expect(c.SameInstance("http://docs.example.com")).To(BeFalse())
		Expect(c.SameInstance("https://docs.example.com:8443")).To(BeFalse())
		Expect(c.SameInstance("https://docs.example.com.evil.example")).To(BeFalse())
		Expect(c.SameInstance("https://10.0.0.1")).To(BeFalse())
		Expect(c.SameInstance("not a url")).To(BeFalse())
	})

	It("wants an absolute http(s) API root without credentials, query or fragment", func() {
		for _, base := range []string{"", "docs.example.com/api", "ftp://docs.example.com", "https://u:p@docs.example.com/api",
			"https://docs.example.com/api?x=1", "https://docs.example.com/api#f"} {
			_, err := outlineapi.New(outlineapi.Config{BaseURL: base})
			Expect(err).To(HaveOccurred(), base)
		}
	})
})
