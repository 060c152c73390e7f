package managementapi

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// tokenJSON lists a token: never the token itself, nor its hash.
type tokenJSON struct {
	ID         int64   `json:"id"`
	CreatedAt  string  `json:"createdAt"`
	LastUsedAt *string `json:"lastUsedAt"`
	ExpiresAt  *string `json:"expiresAt"`
}

func optionalTimestamp(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := timestamp(*t)
	return &s
}

func toTokenJSON(t ports.Token) tokenJSON {
	return tokenJSON{ID: t.ID, CreatedAt: timestamp(t.CreatedAt), LastUsedAt: optionalTimestamp(t.LastUsedAt), ExpiresAt: optionalTimestamp(t.ExpiresAt)}
}

// writeIssuedToken answers the one response that carries a token: it is not stored and cannot
// be shown again, so no cache may keep it either.
func writeIssuedToken(c *gin.Context, status int, t management.IssuedToken) {
	c.Header("Cache-Control", "no-store")
	c.JSON(status, gin.H{
		"id":        t.ID,
		"accountId": t.AccountID,
		"token":     t.Value,
		"createdAt": timestamp(t.CreatedAt),
		"expiresAt": optionalTimestamp(t.ExpiresAt),
	})
}

func (h handlers) issueToken(c *gin.Context) {
	accountID, err := idParam(c, "accountId")
	if err != nil {
		h.fail(c, err)
		return
	}
	var req struct {
		ExpiresAt *string `json:"expiresAt"`
	}
	// An empty body is a token without expiry.
	if c.Request.ContentLength != 0 {
		if err := bindJSON(c, &req); err != nil {
			h.fail(c, err)
			return
		}
	}
	var expiresAt *time.Time
	if req.ExpiresAt != nil {
		t, err := time.Parse(time.RFC3339, *req.ExpiresAt)
		if err != nil {
			h.fail(c, ports.Reject(ports.ErrMalformed, "invalid-expires-at", "not RFC 3339"))
			return
		}
		expiresAt = &t
	}
	t, err := h.svc.IssueToken(c.Request.Context(), PrincipalOf(c), accountID, expiresAt)
	if err != nil {
		h.fail(c, err)
		return
	}
	writeIssuedToken(c, http.StatusCreated, t)
}

func (h handlers) listTokens(c *gin.Context) {
	accountID, err := idParam(c, "accountId")
	if err != nil {
		h.fail(c, err)
		return
	}
	page, err := Paging(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	ts, total, err := h.svc.ListTokens(c.Request.Context(), PrincipalOf(c), accountID, page)
	if err != nil {
		h.fail(c, err)
		return
	}
	items := make([]tokenJSON, len(ts))
	for i, t := range ts {
		items[i] = toTokenJSON(t)
	}
	c.JSON(http.StatusOK, NewPage(items, page, total))
}

func (h handlers) revokeToken(c *gin.Context) {
	accountID, err := idParam(c, "accountId")
	if err != nil {
		h.fail(c, err)
		return
	}
	tokenID, err := idParam(c, "tokenId")
	if err != nil {
		h.fail(c, err)
		return
	}
	if err := h.svc.RevokeToken(c.Request.Context(), PrincipalOf(c), accountID, tokenID); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

func (h handlers) rotateOwnToken(c *gin.Context) {
	t, err := h.svc.RotateOwnToken(c.Request.Context(), PrincipalOf(c))
	if err != nil {
		h.fail(c, err)
		return
	}
	writeIssuedToken(c, http.StatusOK, t)
}

func (h handlers) disableAccount(c *gin.Context) {
	accountID, err := idParam(c, "accountId")
	if err != nil {
		h.fail(c, err)
		return
	}
	if err := h.svc.DisableAccount(c.Request.Context(), PrincipalOf(c), accountID); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
