package gitlabapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
	"github.com/hephaestus-dev/hephaestus/adapters/restkit"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

var _ contract.ResourceAccessChecker = (*ResourceAccess)(nil)

// Causes of a refused access check, stored as a REVOKED subscription's reason and shown in a
// 403's detail.
const (
	CauseTokenRejected        = "token-rejected"            // 401: invalid, expired or revoked
	CauseTokenForbidden       = "token-forbidden"           // 403: the token lacks read_api
	CauseProjectNotFound      = "project-not-found"         // 404: gone, or invisible to the token
	CauseGroupNotFound        = "group-not-found"           // 404 for a group
	CauseResourceMismatch     = "resource-id-mismatch"      // 200 for another id
	CauseAPIRootNotConfigured = "gitlab-api-not-configured" // no HEPHAESTUS_GITLAB_API_URL: nothing can be verified
)

// maxResourceBody bounds the project or group answer read for its id.
const maxResourceBody = 1 << 20

// ResourceAccess checks that a GITLAB connection's own API token (its api_token, PUT
// …/api-token) can read a subscribed project or group: GET {BaseURL}/projects/{id} or
// /groups/{id} with the token as PRIVATE-TOKEN, sent only to BaseURL's host (no redirect is
// followed) and never put in an error. Without an API root every check refuses: a
// subscription nobody verified is never stored.
type ResourceAccess struct {
	base *url.URL // nil: no API root configured
	http *http.Client
}

// NewResourceAccess validates the API root ("" when none is configured) and http (nil: a 30 s
// client).
func NewResourceAccess(baseURL string, hc *http.Client) (*ResourceAccess, error) {
	if hc == nil {
		hc = restkit.HTTPClient(restkit.DefaultTimeout)
	}
	noRedirect := *hc
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	a := &ResourceAccess{http: &noRedirect}
	if baseURL == "" {
		return a, nil
	}
	u, err := restkit.ParseRoot(baseURL)
	if err != nil {
		return nil, fmt.Errorf("gitlab access: BaseURL %w (https://<host>/api/v4)", err)
	}
	a.base = u
	return a, nil
}

// Kind implements contract.ResourceAccessChecker: GITLAB connections.
func (a *ResourceAccess) Kind() connection.Kind { return gitlab.Kind }

// ResourceTypes implements contract.ResourceAccessChecker.
func (a *ResourceAccess) ResourceTypes() []string {
	return []string{gitlab.ResourceGroup, gitlab.ResourceProject}
}

// CheckAccess implements contract.ResourceAccessChecker. 200 with the same id admits; 401, 403 and
// 404 refuse (GitLab answers 404 for a project the token cannot see); a transport failure, a
// 429, a 5xx or any other answer is an *inbox.TransientError (no verdict).
func (a *ResourceAccess) CheckAccess(ctx context.Context, target contract.AccessTarget, r ports.Resource) (contract.ResourceInfo, error) {
	info, err := a.check(ctx, target.Credential, r)
	return info, err
}

func (a *ResourceAccess) check(ctx context.Context, token []byte, r ports.Resource) (contract.ResourceInfo, error) {
	var none contract.ResourceInfo
	id, err := strconv.ParseInt(r.ID, 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != r.ID {
		return none, fmt.Errorf("gitlab access: %s %q is not a positive integer id: %w", r.Type, r.ID, ports.ErrMalformed)
	}
	path, notFound := "/projects/", CauseProjectNotFound
	switch r.Type {
	case gitlab.ResourceProject:
	case gitlab.ResourceGroup:
		path, notFound = "/groups/", CauseGroupNotFound
	default:
		return none, fmt.Errorf("gitlab access: unknown resource type %q: %w", r.Type, ports.ErrMalformed)
	}
	if a.base == nil {
		return none, fmt.Errorf("%w: %w", contract.ErrUnverifiable, refused(CauseAPIRootNotConfigured))
	}
	if len(token) == 0 {
		return none, fmt.Errorf("%w: %w", contract.ErrUnverifiable, refused(CauseTokenRejected))
	}
	path += strconv.FormatInt(id, 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base.String()+path, nil)
	if err != nil {
		return none, fmt.Errorf("gitlab access GET %s: %w", path, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("PRIVATE-TOKEN", string(token))
	resp, err := a.http.Do(req)
	if err != nil {
		return none, inbox.Transient("gitlab access GET "+path, err)
	}
	defer restkit.Close(resp.Body)
	serr := &StatusError{API: "gitlab api", Op: "GET " + path, Status: resp.StatusCode}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return none, refused(CauseTokenRejected)
	case http.StatusForbidden:
		return none, refused(CauseTokenForbidden)
	case http.StatusNotFound:
		return none, refused(notFound)
	default:
		return none, inbox.Transient("gitlab access", serr)
	}
	body, tooLarge, err := restkit.ReadAtMost(resp.Body, maxResourceBody)
	if err != nil {
		return none, inbox.Transient("gitlab access read GET "+path, err)
	}
	if tooLarge {
		return none, inbox.Transient("gitlab access GET "+path, ErrResponseTooLarge)
	}
	var answer struct {
		ID                *int64 `json:"id"`
		PathWithNamespace string `json:"path_with_namespace"` // a project's
		FullPath          string `json:"full_path"`           // a group's
	}
	if err := json.Unmarshal(body, &answer); err != nil || answer.ID == nil {
		if err == nil {
			err = errors.New("no id")
		}
		return none, inbox.Transient("gitlab access GET "+path, fmt.Errorf("not a %s: %w", r.Type, err))
	}
	if *answer.ID != id {
		return none, refused(CauseResourceMismatch)
	}
	name := answer.PathWithNamespace
	if r.Type == gitlab.ResourceGroup {
		name = answer.FullPath
	}
	return contract.ResourceInfo{Name: name}, nil
}

func refused(cause string) error {
	return ports.Reject(ports.ErrForbidden, contract.ReasonResourceNotAccessible, cause)
}
