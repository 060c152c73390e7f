package outlineapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

var _ contract.ResourceAccessChecker = (*CollectionAccess)(nil)

// Causes of a refused collection check.
const (
	CauseCollectionNotFound   = "collection-not-found"       // 404
	CauseTokenRejected        = "token-rejected"             // 401
	CauseTokenForbidden       = "token-forbidden"            // 403 and other refusals
	CauseAPIRootNotConfigured = "outline-api-not-configured" // no HEPHAESTUS_OUTLINE_API_URL
)

// CollectionAccess checks that an OUTLINE connection's own API key (its api token) can read a
// subscribed collection: POST collections.info on the one configured Outline instance. The
// collection's name is its display name. Without an API root nothing can be verified.
type CollectionAccess struct {
	client *Client // nil: no Outline API root configured
}

// NewCollectionAccess builds the checker; client may be nil.
func NewCollectionAccess(client *Client) *CollectionAccess { return &CollectionAccess{client: client} }

// Kind implements contract.ResourceAccessChecker: Outline connections.
func (a *CollectionAccess) Kind() connection.Kind { return outline.Kind }

// ResourceTypes implements contract.ResourceAccessChecker.
func (a *CollectionAccess) ResourceTypes() []string { return []string{outline.ResourceCollection} }

// CheckAccess implements contract.ResourceAccessChecker. ok with the same id admits; 401, 403 and
// 404 refuse; 429, 5xx and no answer give no verdict.
func (a *CollectionAccess) CheckAccess(ctx context.Context, target contract.AccessTarget, r ports.Resource) (contract.ResourceInfo, error) {
	var none contract.ResourceInfo
	if r.Type != outline.ResourceCollection || r.ID == "" {
		return none, fmt.Errorf("outline access: %s %q is not a collection id: %w", r.Type, r.ID, ports.ErrMalformed)
	}
	if a.client == nil {
		return none, fmt.Errorf("%w: %w", contract.ErrUnverifiable, refused(CauseAPIRootNotConfigured))
	}
	if len(target.Credential) == 0 {
		return none, fmt.Errorf("%w: %w", contract.ErrUnverifiable, refused(CauseTokenRejected))
	}
	raw, err := a.client.CollectionInfo(ctx, string(target.Credential), r.ID)
	var pe *inbox.ProviderError
	switch {
	case err == nil:
	case errors.As(err, &pe) && pe.Kind == inbox.ProviderRefused && pe.Status == http.StatusNotFound:
		return none, refused(CauseCollectionNotFound)
	case errors.As(err, &pe) && pe.Kind == inbox.ProviderRefused && pe.Status == http.StatusUnauthorized:
		return none, refused(CauseTokenRejected)
	case errors.As(err, &pe) && pe.Kind == inbox.ProviderRefused && pe.Status >= 400 && pe.Status < 500:
		return none, refused(CauseTokenForbidden)
	default:
		return none, err
	}
	var c struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return none, inbox.Transient("outline access collections.info", err)
	}
	if c.ID != r.ID {
		return none, refused("collection-id-mismatch")
	}
	return contract.ResourceInfo{Name: c.Name}, nil
}

func refused(cause string) error {
	return ports.Reject(ports.ErrForbidden, contract.ReasonResourceNotAccessible, cause)
}
