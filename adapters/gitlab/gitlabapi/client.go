// Package api reads GitLab's REST API (v4) for the GitLab handlers (handlers.ProviderReader):
// the approval state of a merge request; and, for backfills (adapters/gitlab/gitlabsync), list
// pages in keyset or offset pagination (history.go), whose rel="next" links are kept only when
// they name the same list under BaseURL.
//
// It works against gitlab.com or a self-managed instance (BaseURL
// "https://gitlab.example.com/api/v4"); there is no default, because which instance to ask is
// the operator's choice. The token comes from a function the caller injects, asked on every
// request with the read's Access: a credential of the workspace's own connection (its API
// token), a value only a connection lookup produces; it is sent as the PRIVATE-TOKEN header and only to BaseURL's host: the client builds every URL itself, and it
// follows a redirect only to that same scheme and host, because Go's HTTP client strips
// Authorization on a cross-host redirect but forwards a custom header like PRIVATE-TOKEN.
//
// Every failed call is an *inbox.ProviderError, classified for the inbox's failure table:
// transport failures and 5xx answers, and rate limits (429, waiting for Retry-After or
// RateLimit-Reset), are retried without budget; 404 and 410 also wrap
// handlers.ErrProviderNotFound; any other status, a rejected token (401, 403) or a refused
// redirect included, is ProviderRefused around a *StatusError and uses the unknown-failure
// budget, because a token that GitLab refuses is a configuration problem that retrying alone
// does not fix; a 2xx answer that does not have the documented shape, or is larger than
// MaxBodyBytes, is ProviderUnreadable and uses the budget too, never a permanent failure.
// No error carries the token or a response body.
//
// GitLab answers 404, not 403, for a project the token cannot see, so a token without access
// to a project reads as "nothing to read" there: the handlers then decide readiness from the
// payload alone.
package gitlabapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmodel"
	"github.com/hephaestus-dev/hephaestus/adapters/restkit"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports/credential"
)

var _ gitlabmodel.ProviderReader = (*Client)(nil)

const (
	// An approvals answer is a few KiB even with many approvers.
	defaultMaxBodyBytes = 1 << 20
	maxRedirects        = 10
)

// Config configures the client; zero values take the defaults.
type Config struct {
	// BaseURL is the REST API root, "https://<host>/api/v4". Required.
	BaseURL string
	// Token returns the credential of a read of acc, sent as PRIVATE-TOKEN (a personal,
	// project or group access token with read_api of the workspace's own connection).
	// Required; a credential with an empty secret sends no header.
	Token func(ctx context.Context, acc gitlabmodel.Access) (credential.Credential, error)
	// HTTPClient sends the requests (default: a client with a 30 s timeout). The client uses a
	// copy whose redirect policy keeps the token on BaseURL's host.
	HTTPClient *http.Client
	// MaxBodyBytes bounds each response body (default 1 MiB).
	MaxBodyBytes int64
}

// Client is a GitLab REST API client. It is safe for concurrent use.
type Client struct {
	cfg  Config
	base *url.URL
	http *http.Client
}

// New validates cfg and makes the client.
func New(cfg Config) (*Client, error) {
	if cfg.Token == nil {
		return nil, errors.New("gitlab api: a token function is required")
	}
	base, err := restkit.Setup("gitlab api", "https://<host>/api/v4", cfg.BaseURL, &cfg.HTTPClient, &cfg.MaxBodyBytes, defaultMaxBodyBytes)
	if err != nil {
		return nil, err
	}
	hc := *cfg.HTTPClient // a copy: the caller's client keeps its own redirect policy
	hc.CheckRedirect = sameOrigin(base)
	return &Client{cfg: cfg, base: base, http: &hc}, nil
}

// sameOrigin follows a redirect only to BaseURL's scheme and host (http to https on the same
// host too). Any other redirect is not followed: its 3xx answer becomes a *StatusError.
func sameOrigin(base *url.URL) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		upgrade := base.Scheme == "http" && req.URL.Scheme == "https"
		if len(via) >= maxRedirects || req.URL.Host != base.Host || (req.URL.Scheme != base.Scheme && !upgrade) {
			return http.ErrUseLastResponse
		}
		return nil
	}
}

// StatusError is the cause of a ProviderRefused or 404/410 answer (a 400, a 401, a 403, a
// redirect it does not follow): it uses the unknown-failure budget.
type StatusError = restkit.StatusError

// ErrResponseTooLarge is the cause of a ProviderUnreadable failure for a body over MaxBodyBytes.
var ErrResponseTooLarge = errors.New("gitlab api response larger than the configured bound")

// get requests path (already escaped) and decodes a 2xx body into v.
func (c *Client) get(ctx context.Context, acc gitlabmodel.Access, path string, v any) error {
	_, err := c.getWithHeader(ctx, acc, path, v)
	return err
}

// getWithHeader is get that also answers the 2xx answer's headers (pagination).
func (c *Client) getWithHeader(ctx context.Context, acc gitlabmodel.Access, path string, v any) (http.Header, error) {
	// The base has no query or fragment, so the URL is the concatenation.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base.String()+path, nil)
	if err != nil {
		return nil, fmt.Errorf("gitlab api GET %s: %w", path, err)
	}
	cred, err := c.cfg.Token(ctx, acc)
	if err != nil {
		// Not transient: a token source that keeps failing is a configuration problem, and
		// the unknown-failure budget bounds how long a delivery waits for it.
		return nil, fmt.Errorf("gitlab api token: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if token := cred.Secret(); token != "" {
		req.Header.Set("PRIVATE-TOKEN", token)
	}
	resp, err := c.call(path).Do(c.http, req, v)
	if err != nil {
		return nil, err
	}
	return resp.Header, nil
}

// call is a GET of path. A 429 or 5xx waits for Retry-After or, failing that, RateLimit-Reset.
func (c *Client) call(path string) restkit.Call {
	return restkit.Call{Provider: "gitlab", Op: "GET " + path, MaxBodyBytes: c.cfg.MaxBodyBytes, TooLarge: ErrResponseTooLarge,
		Table: func(resp *http.Response) restkit.Table {
			now := time.Now()
			wait := inbox.ParseRetryAfter(resp.Header.Get("Retry-After"), now)
			if wait == 0 && resp.StatusCode == http.StatusTooManyRequests {
				wait = inbox.UntilReset(resp.Header.Get("RateLimit-Reset"), now)
			}
			return restkit.Table{NotFound: gitlabmodel.ErrProviderNotFound, Wait: wait}
		}}
}

// failure is the *inbox.ProviderError of a GET of path.
func failure(path string, kind inbox.ProviderFailure, status int, cause error) *inbox.ProviderError {
	return restkit.Call{Provider: "gitlab", Op: "GET " + path}.Failure(kind, status, cause)
}

// approvalsAnswer is the part of GET /projects/:id/merge_requests/:iid/approvals the handlers
// use. approved is there in every edition; approvals_left only where approval rules exist
// (GitLab Premium and up), so its absence means none are left.
type approvalsAnswer struct {
	Approved      *bool `json:"approved"`
	ApprovalsLeft *int  `json:"approvals_left"`
}

// MergeRequestApprovals implements gitlabmodel.ProviderReader
// (GET /projects/{id}/merge_requests/{iid}/approvals).
func (c *Client) MergeRequestApprovals(ctx context.Context, acc gitlabmodel.Access, projectID int64, iid int) (gitlabmodel.Approvals, error) {
	if projectID <= 0 || iid <= 0 {
		// Both came from a payload.
		return gitlabmodel.Approvals{}, inbox.ParsingFailure(fmt.Errorf("gitlab api: project %d, merge request iid %d", projectID, iid))
	}
	path := "/projects/" + strconv.FormatInt(projectID, 10) + "/merge_requests/" + strconv.Itoa(iid) + "/approvals"
	var a approvalsAnswer
	if err := c.get(ctx, acc, path, &a); err != nil {
		return gitlabmodel.Approvals{}, err
	}
	if a.Approved == nil {
		return gitlabmodel.Approvals{}, failure(path, inbox.ProviderUnreadable, http.StatusOK, errors.New("no approved field"))
	}
	left := 0
	if a.ApprovalsLeft != nil {
		left = *a.ApprovalsLeft
	}
	if left < 0 {
		return gitlabmodel.Approvals{}, failure(path, inbox.ProviderUnreadable, http.StatusOK, errors.New("negative approvals_left"))
	}
	return gitlabmodel.Approvals{Approved: *a.Approved, ApprovalsLeft: left}, nil
}
