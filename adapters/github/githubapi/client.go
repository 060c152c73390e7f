// Package api reads GitHub's REST API for the GitHub handlers (handlers.ProviderReader): the
// commits a push payload left out and the check runs of a commit or a check suite.
//
// It works against github.com or a GitHub Enterprise Server (BaseURL
// "https://ghe.example/api/v3"). The token comes from a function the caller injects, asked on
// every request, so a rotating installation token can be plugged in later; it is sent only to
// BaseURL's host (the client builds every URL itself and never follows a URL from a response).
//
// Every failed call is an *inbox.ProviderError, classified for the inbox's failure table:
// transport failures and 5xx answers (ProviderTransport, ProviderServerError) and rate limits
// (ProviderRateLimited: 429, or 403 with X-RateLimit-Remaining 0 or Retry-After, waiting for
// Retry-After or X-RateLimit-Reset) are retried without budget; 404 and 410 also wrap
// handlers.ErrProviderNotFound; any other status, a rejected token (401) included, is
// ProviderRefused around a *StatusError and uses the unknown-failure budget, because a token
// that GitHub refuses is a configuration problem that retrying alone does not fix; a 2xx answer
// that does not have the documented shape, or is larger than MaxBodyBytes, is
// ProviderUnreadable and uses the budget too. None of them is a permanent failure: only the
// stored payload can prove that (a repository name from the payload that is not owner/name).
// No error carries the token or a response body.
package githubapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmodel"
	"github.com/hephaestus-dev/hephaestus/adapters/restkit"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports/credential"
)

var _ githubmodel.ProviderReader = (*Client)(nil)

// DefaultBaseURL is github.com's REST API.
const DefaultBaseURL = "https://api.github.com"

const (
	defaultMaxBodyBytes = 8 << 20
	defaultMaxPages     = 10
	perPage             = 100
	apiVersion          = "2022-11-28"
)

// Config configures the client; zero values take the defaults.
type Config struct {
	// BaseURL is the REST API root: DefaultBaseURL, or a GitHub Enterprise Server's
	// "https://<host>/api/v3".
	BaseURL string
	// Token returns the credential of a read of acc, a value only a connection lookup can
	// produce (the zero credential sends no Authorization). Required. A server's is
	// Credentials.Token: the installation token or PAT of the workspace's own connection.
	Token func(ctx context.Context, acc githubmodel.Access) (credential.Credential, error)
	// Rejected, when set, is told of a credential GitHub answered 401 (Credentials.Rejected
	// drops a cached installation token); the read is then made once more with a new one.
	Rejected func(cred credential.Credential)
	// HTTPClient sends the requests (default: a client with a 30 s timeout).
	HTTPClient *http.Client
	// MaxBodyBytes bounds each response body (default 8 MiB).
	MaxBodyBytes int64
	// MaxPages bounds how many pages of 100 a list reads (default 10).
	MaxPages int
	// UserAgent is sent with every request, as GitHub requires (default "hephaestus").
	UserAgent string
}

// Client is a GitHub REST API client. It is safe for concurrent use.
type Client struct {
	cfg  Config
	base *url.URL
}

// New validates cfg and makes the client.
func New(cfg Config) (*Client, error) {
	if cfg.Token == nil {
		return nil, errors.New("github api: a token function is required")
	}
	if cfg.MaxPages == 0 {
		cfg.MaxPages = defaultMaxPages
	}
	if cfg.MaxPages < 0 {
		return nil, errors.New("github api: MaxPages must not be negative")
	}
	base, err := cfg.setup()
	if err != nil {
		return nil, err
	}
	return &Client{cfg: cfg, base: base}, nil
}

// setup gives the settings every GitHub client shares (BaseURL, HTTPClient, MaxBodyBytes,
// UserAgent) their defaults and answers the checked API root (restkit.Setup).
func (c *Config) setup() (*url.URL, error) {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if c.UserAgent == "" {
		c.UserAgent = "hephaestus"
	}
	return restkit.Setup("github api", "https://api.github.com", c.BaseURL, &c.HTTPClient, &c.MaxBodyBytes, defaultMaxBodyBytes)
}

// StatusError is the cause of a ProviderRefused or 404/410 answer (a 400, a 401, a 403 that is
// not a rate limit, a 422): it uses the unknown-failure budget.
type StatusError = restkit.StatusError

// ErrResponseTooLarge is the cause of a ProviderUnreadable failure for a body over MaxBodyBytes.
var ErrResponseTooLarge = errors.New("github api response larger than the configured bound")

// repoPath is /repos/{owner}/{name} with both segments escaped. Errors: a parsing failure for a
// name that is not "owner/name" (it came from a payload).
func repoPath(repo string) (string, error) {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return "", inbox.ParsingFailure(fmt.Errorf("github api: repository %q is not owner/name", repo))
	}
	return "/repos/" + url.PathEscape(owner) + "/" + url.PathEscape(name), nil
}

// get requests path with query and decodes a 2xx body into v. more reports whether the answer
// links a next page. An installation token GitHub answers 401 (revoked, or the installation
// changed) is dropped from the cache and the read is made once more with a newly minted one.
func (c *Client) get(ctx context.Context, acc githubmodel.Access, path string, query url.Values, v any) (more bool, err error) {
	for attempt := 0; ; attempt++ {
		more, cred, err := c.getOnce(ctx, acc, path, query, v)
		var pe *inbox.ProviderError
		if attempt == 0 && cred.InstallationID() > 0 && c.cfg.Rejected != nil &&
			errors.As(err, &pe) && pe.Status == http.StatusUnauthorized {
			c.cfg.Rejected(cred)
			continue
		}
		return more, err
	}
}

// getOnce is one request of get, with the credential it carried.
func (c *Client) getOnce(ctx context.Context, acc githubmodel.Access, path string, query url.Values, v any) (more bool, cred credential.Credential, err error) {
	// path is already escaped segment by segment, and the base has no query or fragment, so
	// the URL is their concatenation.
	target := c.base.String() + path + "?" + query.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return false, cred, fmt.Errorf("github api GET %s: %w", path, err)
	}
	cred, err = c.cfg.Token(ctx, acc)
	if err != nil {
		// Not transient: a token source that keeps failing is a configuration problem, and
		// the unknown-failure budget bounds how long a delivery waits for it.
		return false, cred, fmt.Errorf("github api token: %w", err)
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", apiVersion)
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	if token := cred.Secret(); token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := call(http.MethodGet, path, c.cfg.MaxBodyBytes).Do(c.cfg.HTTPClient, req, v)
	if err != nil {
		return false, cred, err
	}
	return hasNext(resp.Header.Get("Link")), cred, nil
}

// failure is the *inbox.ProviderError of a GET of path.
func failure(path string, kind inbox.ProviderFailure, status int, cause error) *inbox.ProviderError {
	return failureOf(http.MethodGet, path, kind, status, cause)
}

// failureOf is the *inbox.ProviderError of a call of method to path.
func failureOf(method, path string, kind inbox.ProviderFailure, status int, cause error) *inbox.ProviderError {
	return call(method, path, 0).Failure(kind, status, cause)
}

// unreadable is an answer that decoded but lacks what GitHub documents.
func unreadable(path, what string) error {
	return failure(path, inbox.ProviderUnreadable, http.StatusOK, errors.New(what))
}

// call is a call of method to path whose answer is at most maxBody bytes. GitHub answers rate
// limits (primary and secondary) with 403 or 429; a rate limit or a 5xx waits for Retry-After
// (secondary limits) or, with no requests left, for X-RateLimit-Reset (primary).
func call(method, path string, maxBody int64) restkit.Call {
	return restkit.Call{Provider: "github", Op: method + " " + path, MaxBodyBytes: maxBody, TooLarge: ErrResponseTooLarge,
		Table: func(resp *http.Response) restkit.Table {
			h, now := resp.Header, time.Now()
			return restkit.Table{
				NotFound: githubmodel.ErrProviderNotFound,
				RateLimited: resp.StatusCode == http.StatusForbidden &&
					(h.Get("X-RateLimit-Remaining") == "0" || h.Get("Retry-After") != ""),
				Wait: max(inbox.ParseRetryAfter(h.Get("Retry-After"), now), rateLimitReset(h, now)),
			}
		}}
}

// rateLimitReset is the wait until X-RateLimit-Reset when no request is left in the window.
func rateLimitReset(h http.Header, now time.Time) time.Duration {
	if h.Get("X-RateLimit-Remaining") != "0" {
		return 0
	}
	return inbox.UntilReset(h.Get("X-RateLimit-Reset"), now)
}

// hasNext reports whether a Link header names a next page. The client requests that page by
// number itself, and never follows the URL, so a token never leaves BaseURL's host.
func hasNext(link string) bool {
	_, ok := restkit.NextLink(link)
	return ok
}

func pageQuery(page int) url.Values {
	return url.Values{"per_page": {strconv.Itoa(perPage)}, "page": {strconv.Itoa(page)}}
}

type apiCheckRun struct {
	ID          int64      `json:"id"`
	HeadSHA     string     `json:"head_sha"`
	Name        string     `json:"name"`
	Status      string     `json:"status"`
	Conclusion  *string    `json:"conclusion"`
	StartedAt   *time.Time `json:"started_at"`
	CompletedAt *time.Time `json:"completed_at"`
	CheckSuite  *struct {
		ID int64 `json:"id"`
	} `json:"check_suite"`
}

type checkRunsPage struct {
	TotalCount *int          `json:"total_count"`
	CheckRuns  []apiCheckRun `json:"check_runs"`
}

// CheckRunsForRef implements githubmodel.ProviderReader (GET /repos/{o}/{r}/commits/{ref}/check-runs).
func (c *Client) CheckRunsForRef(ctx context.Context, acc githubmodel.Access, repo, ref string) ([]githubmodel.CheckRun, error) {
	rp, err := repoPath(repo)
	if err != nil {
		return nil, err
	}
	if ref == "" {
		return nil, inbox.ParsingFailure(errors.New("github api: empty ref"))
	}
	return c.checkRuns(ctx, acc, rp+"/commits/"+url.PathEscape(ref)+"/check-runs")
}

// CheckRunsForSuite implements githubmodel.ProviderReader
// (GET /repos/{o}/{r}/check-suites/{id}/check-runs).
func (c *Client) CheckRunsForSuite(ctx context.Context, acc githubmodel.Access, repo string, suiteID int64) ([]githubmodel.CheckRun, error) {
	rp, err := repoPath(repo)
	if err != nil {
		return nil, err
	}
	if suiteID <= 0 {
		return nil, inbox.ParsingFailure(fmt.Errorf("github api: check suite id %d", suiteID))
	}
	return c.checkRuns(ctx, acc, rp+"/check-suites/"+strconv.FormatInt(suiteID, 10)+"/check-runs")
}

func (c *Client) checkRuns(ctx context.Context, acc githubmodel.Access, path string) ([]githubmodel.CheckRun, error) {
	var out []githubmodel.CheckRun
	for page := 1; page <= c.cfg.MaxPages; page++ {
		var p checkRunsPage
		more, err := c.get(ctx, acc, path, pageQuery(page), &p)
		if err != nil {
			return nil, err
		}
		if p.TotalCount == nil || p.CheckRuns == nil {
			return nil, unreadable(path, "no check_runs list")
		}
		for _, r := range p.CheckRuns {
			if r.ID <= 0 || r.HeadSHA == "" || r.Name == "" {
				return nil, unreadable(path, "check run without id, head SHA or name")
			}
			run := githubmodel.CheckRun{
				ID: r.ID, HeadSHA: strings.ToLower(r.HeadSHA), Name: r.Name, Status: r.Status,
				Conclusion: r.Conclusion, StartedAt: utc(r.StartedAt), CompletedAt: utc(r.CompletedAt),
			}
			if r.CheckSuite != nil && r.CheckSuite.ID > 0 {
				id := r.CheckSuite.ID
				run.CheckSuiteID = &id
			}
			out = append(out, run)
		}
		if !more || len(p.CheckRuns) < perPage {
			break
		}
	}
	return out, nil
}

type apiGitActor struct {
	Name  string     `json:"name"`
	Email string     `json:"email"`
	Date  *time.Time `json:"date"`
}

type apiCommit struct {
	SHA     string `json:"sha"`
	HTMLURL string `json:"html_url"`
	Commit  *struct {
		Message   string       `json:"message"`
		Author    *apiGitActor `json:"author"`
		Committer *apiGitActor `json:"committer"`
	} `json:"commit"`
	Author *struct {
		Login string `json:"login"`
	} `json:"author"`
}

type comparePage struct {
	Commits []apiCommit `json:"commits"`
}

// CompareCommits implements githubmodel.ProviderReader (GET /repos/{o}/{r}/compare/{base}...{head}).
func (c *Client) CompareCommits(ctx context.Context, acc githubmodel.Access, repo, base, head string) ([]githubmodel.Commit, error) {
	rp, err := repoPath(repo)
	if err != nil {
		return nil, err
	}
	if base == "" || head == "" {
		return nil, inbox.ParsingFailure(errors.New("github api: compare needs a base and a head"))
	}
	path := rp + "/compare/" + url.PathEscape(base) + "..." + url.PathEscape(head)
	var out []githubmodel.Commit
	for page := 1; page <= c.cfg.MaxPages; page++ {
		var p comparePage
		more, err := c.get(ctx, acc, path, pageQuery(page), &p)
		if err != nil {
			return nil, err
		}
		if p.Commits == nil {
			return nil, unreadable(path, "no commits list")
		}
		for _, ac := range p.Commits {
			if ac.SHA == "" || ac.Commit == nil {
				return nil, unreadable(path, "commit without sha")
			}
			cm := githubmodel.Commit{SHA: strings.ToLower(ac.SHA), Message: ac.Commit.Message, HTMLURL: ac.HTMLURL}
			if a := ac.Commit.Author; a != nil {
				cm.AuthorName, cm.AuthorEmail = a.Name, a.Email
			}
			if cc := ac.Commit.Committer; cc != nil {
				cm.CommitterName, cm.CommitterEmail, cm.CommittedAt = cc.Name, cc.Email, utc(cc.Date)
			}
			if ac.Author != nil && ac.Author.Login != "" {
				login := ac.Author.Login
				cm.AuthorLogin = &login
			}
			out = append(out, cm)
		}
		if !more || len(p.Commits) < perPage {
			break
		}
	}
	return out, nil
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
