package githubapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/restkit"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

var _ contract.ResourceAccessChecker = (*RepositoryAccess)(nil)

// Causes of a refused access check, stored as a REVOKED subscription's reason.
const (
	CauseTokenRejected      = "token-rejected"         // 401: the token is invalid, expired or revoked
	CauseTokenForbidden     = "token-forbidden"        // 403 that is no rate limit
	CauseRepositoryNotFound = "repository-not-found"   // 404: gone, or private to the token
	CauseRepositoryMismatch = "repository-id-mismatch" // 200 for another repository
)

// maxRepositoryBody bounds the repository answer read for its id.
const maxRepositoryBody = 1 << 20

// AccessConfig configures RepositoryAccess; zero values take the Client's defaults.
type AccessConfig struct {
	BaseURL    string
	HTTPClient *http.Client
	UserAgent  string
}

// RepositoryAccess checks that a GITHUB_PAT connection's personal access token can read a
// repository: GET {BaseURL}/repositories/{id} with the token as bearer. The token is sent only
// to BaseURL's host and appears in no error.
type RepositoryAccess struct {
	base      *url.URL
	http      *http.Client
	userAgent string
}

// NewRepositoryAccess validates cfg.
func NewRepositoryAccess(cfg AccessConfig) (*RepositoryAccess, error) {
	c := Config{BaseURL: cfg.BaseURL, HTTPClient: cfg.HTTPClient, UserAgent: cfg.UserAgent}
	base, err := c.setup()
	if err != nil {
		return nil, err
	}
	return &RepositoryAccess{base: base, http: c.HTTPClient, userAgent: c.UserAgent}, nil
}

// Kind implements contract.ResourceAccessChecker: PAT connections.
func (a *RepositoryAccess) Kind() connection.Kind { return github.KindPAT }

// ResourceTypes implements contract.ResourceAccessChecker: a PAT subscribes to repositories only
// (an organization's events would reach repositories the token cannot read).
func (a *RepositoryAccess) ResourceTypes() []string { return []string{github.ResourceRepository} }

// CheckAccess implements contract.ResourceAccessChecker. 200 with the same id admits; 401, 403
// (not a rate limit) and 404 refuse; a transport failure, a rate limit or any other answer is
// an *inbox.TransientError (no verdict: retried).
func (a *RepositoryAccess) CheckAccess(ctx context.Context, target contract.AccessTarget, r ports.Resource) (contract.ResourceInfo, error) {
	id, err := strconv.ParseInt(r.ID, 10, 64)
	if r.Type != github.ResourceRepository || err != nil || id <= 0 {
		return contract.ResourceInfo{}, fmt.Errorf("github access: %s %q is not a repository id: %w", r.Type, r.ID, ports.ErrMalformed)
	}
	if len(target.Credential) == 0 {
		return contract.ResourceInfo{}, refused(CauseTokenRejected)
	}
	return checkByID(ctx, a.http, a.base, a.userAgent, string(target.Credential), "/repositories/", id, CauseRepositoryNotFound)
}

// checkByID is GET {base}{prefix}{id} with token as bearer: 200 with the same id admits (its
// full_name, or its login, is the resource's name); 401, 403 (not a rate limit) and 404
// refuse; a transport failure, a rate limit or any other answer is an *inbox.TransientError.
// The token goes only to base's host and into no error.
func checkByID(ctx context.Context, hc *http.Client, base *url.URL, userAgent, token, prefix string, id int64, notFound string) (contract.ResourceInfo, error) {
	var none contract.ResourceInfo
	if token == "" {
		return none, refused(CauseTokenRejected)
	}
	path := prefix + strconv.FormatInt(id, 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base.String(), "/")+path, nil)
	if err != nil {
		return none, fmt.Errorf("github access GET %s: %w", path, err)
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", apiVersion)
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		// The error names the URL, never the Authorization header.
		return none, inbox.Transient("github access GET "+path, err)
	}
	defer restkit.Close(resp.Body)
	serr := &StatusError{API: "github api", Op: "GET " + path, Status: resp.StatusCode}
	switch status := resp.StatusCode; {
	case status == http.StatusOK:
	case status == http.StatusUnauthorized:
		return none, refused(CauseTokenRejected)
	case status == http.StatusForbidden && (resp.Header.Get("X-RateLimit-Remaining") == "0" || resp.Header.Get("Retry-After") != ""):
		return none, inbox.Transient("github access rate limit", serr)
	case status == http.StatusForbidden:
		return none, refused(CauseTokenForbidden)
	case status == http.StatusNotFound:
		return none, refused(notFound)
	default:
		return none, inbox.Transient("github access", serr)
	}
	var repo struct {
		ID       *int64 `json:"id"`
		FullName string `json:"full_name"` // a repository's
		Login    string `json:"login"`     // an organization's
	}
	body, tooLarge, err := restkit.ReadAtMost(resp.Body, maxRepositoryBody)
	if err != nil {
		return none, inbox.Transient("github access read GET "+path, err)
	}
	if tooLarge {
		return none, inbox.Transient("github access GET "+path, ErrResponseTooLarge)
	}
	if err := json.Unmarshal(body, &repo); err != nil || repo.ID == nil {
		if err == nil {
			err = errors.New("no id")
		}
		return none, inbox.Transient("github access GET "+path, fmt.Errorf("not a repository: %w", err))
	}
	if *repo.ID != id {
		return none, refused(CauseRepositoryMismatch)
	}
	name := repo.FullName
	if name == "" {
		name = repo.Login
	}
	return contract.ResourceInfo{Name: name}, nil
}

func refused(cause string) error {
	return ports.Reject(ports.ErrForbidden, contract.ReasonResourceNotAccessible, cause)
}
