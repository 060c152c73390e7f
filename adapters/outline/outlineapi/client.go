// Package outlineapi calls the Outline API (RPC style: POST {root}/{method} with a JSON body,
// answering {"ok":true,"data":…,"pagination":…}) for the Outline sync source: a collection
// (collections.info) and one page of its documents (documents.list).
//
// It calls one instance only, the configured BaseURL (HEPHAESTUS_OUTLINE_API_URL), so a tenant
// cannot point the server at another host: SameInstance tells the source whether a
// connection's source server is that instance. The token is an argument of each call (every
// connection has its own API key), sent as Authorization: Bearer and never followed anywhere:
// no redirect is followed at all.
//
// Every failed call is an *inbox.ProviderError, classified for the inbox's failure table:
// transport failures and 5xx answers, and rate limits (429, waiting for Retry-After or
// RateLimit-Reset), are retried without budget; 401 and 403 (a refused or revoked key) and
// every other status, a redirect included, are ProviderRefused around a *StatusError and use
// the budget; a 2xx answer without the documented envelope, or larger than MaxBodyBytes, is
// ProviderUnreadable. No error carries the token or a response body.
package outlineapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hephaestus-dev/hephaestus/adapters/restkit"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

const (
	// A page of 100 documents with their Markdown text: 8 MiB holds long documents.
	defaultMaxBodyBytes = 8 << 20
)

// Config configures the client; zero values take the defaults.
type Config struct {
	// BaseURL is the API root of the Outline instance, "https://app.getoutline.com/api".
	// Required.
	BaseURL string
	// HTTPClient sends the requests (default: a client with a 30 s timeout). The client uses a
	// copy that follows no redirect.
	HTTPClient *http.Client
	// MaxBodyBytes bounds each response body (default 8 MiB).
	MaxBodyBytes int64
	// Now is the clock a RateLimit-Reset date is read against (default time.Now).
	Now func() time.Time
}

// Client is an Outline API client of one instance. It is safe for concurrent use.
type Client struct {
	cfg  Config
	base *url.URL
	http *http.Client
}

// New validates cfg and makes the client.
func New(cfg Config) (*Client, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	base, err := restkit.Setup("outline api", "https://<host>/api", cfg.BaseURL, &cfg.HTTPClient, &cfg.MaxBodyBytes, defaultMaxBodyBytes)
	if err != nil {
		return nil, err
	}
	hc := *cfg.HTTPClient // a copy: the caller's client keeps its own redirect policy
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Client{cfg: cfg, base: base, http: &hc}, nil
}

// SameInstance reports whether sourceServerURL (a connection's) is on the configured
// instance: the same scheme, host and port (a missing port is the scheme's default).
func (c *Client) SameInstance(sourceServerURL string) bool {
	u, err := url.Parse(sourceServerURL)
	if err != nil || u.Host == "" {
		return false
	}
	return strings.EqualFold(u.Scheme, c.base.Scheme) && strings.EqualFold(u.Hostname(), c.base.Hostname()) &&
		port(u) == port(c.base)
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// StatusError is the cause of a ProviderRefused answer (a 400, a 401, a 403, a redirect).
type StatusError = restkit.StatusError

// ErrResponseTooLarge is the cause of a ProviderUnreadable failure for a body over MaxBodyBytes.
var ErrResponseTooLarge = errors.New("outline api response larger than the configured bound")

// envelope is every Outline answer's frame.
type envelope struct {
	OK         bool            `json:"ok"`
	Data       json.RawMessage `json:"data"`
	Pagination *Pagination     `json:"pagination"`
}

// Pagination is Outline's paging of a list answer; NextPath is "" on the last page.
type Pagination struct {
	Offset   int    `json:"offset"`
	Limit    int    `json:"limit"`
	NextPath string `json:"nextPath"`
}

// call POSTs body to method with token and answers the 2xx envelope.
func (c *Client) call(ctx context.Context, method, token string, body any) (envelope, error) {
	op := "POST " + method
	raw, err := json.Marshal(body)
	if err != nil {
		return envelope{}, fmt.Errorf("outline api %s: %w", method, err)
	}
	// The base has no query or fragment, so the URL is the concatenation.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base.String()+"/"+method, bytes.NewReader(raw))
	if err != nil {
		return envelope{}, fmt.Errorf("outline api %s: %w", method, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	var env envelope
	resp, err := c.rest(op).Do(c.http, req, &env)
	if err != nil {
		return envelope{}, err
	}
	if !env.OK || len(env.Data) == 0 {
		return envelope{}, failure(op, inbox.ProviderUnreadable, resp.StatusCode, errors.New("answer is not ok or has no data"))
	}
	return env, nil
}

// failure is the *inbox.ProviderError of a call.
func failure(op string, kind inbox.ProviderFailure, status int, cause error) *inbox.ProviderError {
	return restkit.Call{Provider: "outline", Op: op}.Failure(kind, status, cause)
}

// rest is a call of op. A 429 or 5xx waits for Retry-After or, failing that, RateLimit-Reset.
func (c *Client) rest(op string) restkit.Call {
	return restkit.Call{Provider: "outline", Op: op, MaxBodyBytes: c.cfg.MaxBodyBytes, TooLarge: ErrResponseTooLarge,
		Table: func(resp *http.Response) restkit.Table {
			now := c.cfg.Now()
			wait := retryAfter(resp.Header.Get("Retry-After"), now)
			if wait == 0 && resp.StatusCode == http.StatusTooManyRequests {
				wait = untilReset(resp.Header.Get("RateLimit-Reset"), now)
			}
			return restkit.Table{Wait: wait}
		}}
}

// retryAfter reads Retry-After. Outline writes the seconds left as a JavaScript number, which
// may have a fraction ("59.998"): it is rounded up, so the wait is never shorter than asked.
// An HTTP date is read as inbox.ParseRetryAfter does.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if secs, err := strconv.ParseFloat(v, 64); err == nil && !strings.ContainsAny(v, "eE") {
		if secs <= 0 || math.IsNaN(secs) {
			return 0
		}
		return inbox.ParseRetryAfter(strconv.FormatInt(int64(math.Ceil(min(secs, 1<<31))), 10), now)
	}
	return inbox.ParseRetryAfter(v, now)
}

// resetLayouts are the forms Outline's RateLimit-Reset takes: a JavaScript Date's string form
// ("Wed Dec 02 2026 03:00:00 GMT+0000 (Coordinated Universal Time)", the zone name cut off
// before parsing) or an HTTP date.
var resetLayouts = []string{"Mon Jan 02 2006 15:04:05 GMT-0700", http.TimeFormat, time.RFC3339}

// untilReset reads RateLimit-Reset as Unix seconds or as a date; 0 when absent, past or
// unreadable.
func untilReset(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if d := inbox.UntilReset(v, now); d > 0 {
		return d
	}
	if i := strings.Index(v, " ("); i > 0 {
		v = v[:i]
	}
	for _, layout := range resetLayouts {
		if t, err := time.Parse(layout, v); err == nil {
			if t.After(now) {
				return inbox.ParseRetryAfter(strconv.FormatInt(int64(math.Ceil(t.Sub(now).Seconds())), 10), now)
			}
			return 0
		}
	}
	return 0
}
