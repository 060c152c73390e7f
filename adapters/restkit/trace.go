package restkit

// Why this file: every provider API call is a client span of its delivery's trace (otelhttp),
// but otelhttp records the request's full URL, and a provider URL can name a person (GitHub's
// /users/{login}, a repository under a user's login) or carry a query value. The span sees a
// redacted copy of the URL; the request that goes out keeps the real one.

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"
)

// HTTPClient is a provider API client's default *http.Client: timeout, and Transport.
func HTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: Transport(nil)}
}

// Transport wraps base (http.DefaultTransport when nil) so that each request is a client span
// (otelhttp, on the global tracer provider: no-op unless tracing is on) whose url.full is
// RedactURL of the request's URL. No trace context is sent to the provider.
func Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	traced := otelhttp.NewTransport(restoreURL{next: base},
		otelhttp.WithPropagators(propagation.NewCompositeTextMapPropagator()),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			return r.Method + " " + r.URL.Path // r is the redacted copy
		}))
	return redactURL{next: traced}
}

type realURLKey struct{}

// redactURL hands the traced transport a request whose URL is redacted, the real URL riding
// in its context.
type redactURL struct{ next http.RoundTripper }

func (t redactURL) RoundTrip(r *http.Request) (*http.Response, error) {
	shown := r.WithContext(context.WithValue(r.Context(), realURLKey{}, r.URL))
	shown.URL = RedactURL(r.URL)
	return t.next.RoundTrip(shown)
}

// restoreURL sends the request with its real URL again.
type restoreURL struct{ next http.RoundTripper }

func (t restoreURL) RoundTrip(r *http.Request) (*http.Response, error) {
	if u, ok := r.Context().Value(realURLKey{}).(*url.URL); ok {
		real := r.WithContext(r.Context())
		real.URL = u
		r = real
	}
	return t.next.RoundTrip(r)
}

// pathWords are the fixed words of the providers' API paths, kept as they are; every other
// segment is an id or a name and is replaced.
var pathWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`api v1 v3 v4 graphql repos repositories issues pulls comments
		reviews commits labels members users user orgs installation installations app hook hooks
		deliveries attempts access_tokens projects merge_requests notes discussions pipelines groups
		collaborators permission events timeline teams contents git refs branches milestones
		assignees search rate_limit memberships personal_access_tokens approvals approval_state
		pipeline jobs statuses check_runs check_suites releases tags tree blob files raw
		self tokens access`) {
		m[w] = true
	}
	return m
}()

// apiMethod is a Slack or Outline Web API method (conversations.history, documents.info).
var apiMethod = regexp.MustCompile(`^[a-z]+(\.[a-zA-Z]+)+$`)

// RedactURL is u as a span may show it: scheme, host and path, with every path segment that
// is not a fixed API word (or a Web API method right after /api) replaced by :id (digits) or
// :name; no user info, query or fragment.
func RedactURL(u *url.URL) *url.URL {
	if u == nil {
		return nil
	}
	segs := strings.Split(strings.TrimPrefix(u.EscapedPath(), "/"), "/")
	for i, s := range segs {
		switch {
		case s == "" || pathWords[s]:
		case i > 0 && segs[i-1] == "api" && apiMethod.MatchString(s):
		case strings.Trim(s, "0123456789") == "":
			segs[i] = ":id"
		default:
			segs[i] = ":name"
		}
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/" + strings.Join(segs, "/")}
}
