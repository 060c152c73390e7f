package managementapi

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// accountJSON lists an account: never a token.
type accountJSON struct {
	ID            int64   `json:"id"`
	Login         string  `json:"login"`
	InstanceAdmin bool    `json:"instanceAdmin"`
	CreatedAt     string  `json:"createdAt"`
	DisabledAt    *string `json:"disabledAt"`
}

// listAccounts pages every account, disabled ones included (the instance administrator only:
// the use case refuses anyone else with 403).
func (h handlers) listAccounts(c *gin.Context) {
	page, err := Paging(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	accounts, total, err := h.svc.ListAccounts(c.Request.Context(), PrincipalOf(c), page)
	if err != nil {
		h.fail(c, err)
		return
	}
	items := make([]accountJSON, len(accounts))
	for i, a := range accounts {
		items[i] = accountJSON{ID: a.ID, Login: a.Login, InstanceAdmin: a.InstanceAdmin, CreatedAt: timestamp(a.CreatedAt),
			DisabledAt: optionalTimestamp(a.DisabledAt)}
	}
	c.JSON(http.StatusOK, NewPage(items, page, total))
}

type memberJSON struct {
	AccountID int64  `json:"accountId"`
	Login     string `json:"login"`
	Role      string `json:"role"`
	Disabled  bool   `json:"disabled"`
}

// listMembers pages the workspace's members (RequireManager: its ADMINs and the instance
// administrator).
func (h handlers) listMembers(c *gin.Context) {
	page, err := Paging(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	members, total, err := h.svc.ListMembers(c.Request.Context(), ManagedOf(c), page)
	if err != nil {
		h.fail(c, err)
		return
	}
	items := make([]memberJSON, len(members))
	for i, m := range members {
		items[i] = memberJSON{AccountID: m.AccountID, Login: m.Login, Role: m.Role.String(), Disabled: m.Disabled}
	}
	c.JSON(http.StatusOK, NewPage(items, page, total))
}
