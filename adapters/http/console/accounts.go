package console

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/http/httperr"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// pager is one page of a paged list: links to the previous and next pages (-1: none), and the
// page's number as people count (Page counts from 0, as the API's ?page=).
type pager struct {
	Page, Number, Prev, Next, Total int
}

func newPager(req ports.PageRequest, total int) pager {
	p := pager{Page: req.Page, Number: req.Page + 1, Prev: -1, Next: -1, Total: total}
	if req.Page > 0 {
		p.Prev = req.Page - 1
	}
	if (req.Page+1)*req.Size < total {
		p.Next = req.Page + 1
	}
	return p
}

// secretView is the one page that shows a new token: it is not stored anywhere, so the page is
// its only copy (the console's Cache-Control: no-store keeps it out of every cache, and it is
// never put in a URL or a cookie).
type secretView struct {
	What      string // "account", "token", "rotated"
	AccountID int64
	Login     string
	TokenID   int64
	Token     string
	ExpiresAt *time.Time
}

// accountsView is the account administration page.
type accountsView struct {
	Items []ports.Account
	Pager pager
	// Login and InstanceAdmin keep what was typed when the creation was refused.
	Login         string
	InstanceAdmin bool
}

// accounts lists every account, paged, with the form to create one (instance administrator,
// as GET/POST /api/admin/accounts).
func (c *console) accounts(g *gin.Context) {
	c.renderAccounts(g, http.StatusOK, "", accountsView{})
}

func (c *console) renderAccounts(g *gin.Context, status int, message string, v accountsView) {
	req := pageOf(g)
	items, total, err := c.cfg.Management.ListAccounts(g.Request.Context(), sessionOf(g).principal, req)
	if err != nil {
		c.fail(g, err)
		return
	}
	v.Items, v.Pager = items, newPager(req, total)
	var notice string
	if disabled, err := strconv.ParseInt(g.Query("disabled"), 10, 64); err == nil {
		// The notice names an account as listed, never text of the URL.
		for _, a := range items {
			if a.ID == disabled && a.DisabledAt != nil {
				notice = fmt.Sprintf("Account %s (%d) is disabled: its tokens no longer work.", a.Login, a.ID)
			}
		}
	}
	c.render(g, status, "accounts", page{Title: "Accounts", Notice: notice, Message: message, Data: v})
}

// createAccount creates an account and shows its first token once.
func (c *console) createAccount(g *gin.Context) {
	login := strings.TrimSpace(g.PostForm("login"))
	admin := g.PostForm("instanceAdmin") == "on"
	a, err := c.cfg.Management.CreateAccount(g.Request.Context(), sessionOf(g).principal, login, admin)
	if err != nil {
		status, code := httperr.Status(err)
		var msg string
		switch {
		case status == http.StatusBadRequest:
			msg = "That login is not valid (" + code + "): use letters, digits, '.', '_' or '-'."
		case status == http.StatusConflict:
			msg = "An account with that login exists already."
		default:
			c.fail(g, err)
			return
		}
		c.renderAccounts(g, status, msg, accountsView{Login: login, InstanceAdmin: admin})
		return
	}
	c.render(g, http.StatusCreated, "secret", page{Title: "Account created",
		Data: secretView{What: "account", AccountID: a.ID, Login: a.Login, Token: a.Token}})
}

// accountIDParam is the :account path parameter (404 when it is no id).
func accountIDParam(g *gin.Context) (int64, error) {
	id, err := strconv.ParseInt(g.Param("account"), 10, 64)
	if err != nil || id <= 0 {
		return 0, ports.ErrNotFound
	}
	return id, nil
}

// confirmDisable asks before disabling an account: every token of it stops working at once.
func (c *console) confirmDisable(g *gin.Context) {
	if _, ok := c.requireInstanceAdmin(g); !ok {
		return
	}
	id, err := accountIDParam(g)
	if err != nil {
		c.fail(g, err)
		return
	}
	c.render(g, http.StatusOK, "accountdisable", page{Title: fmt.Sprintf("Disable account %d", id), Data: id})
}

// disableAccount disables the account (as DELETE /api/admin/accounts/{id}). The API offers no
// way back, so neither does the console.
func (c *console) disableAccount(g *gin.Context) {
	id, err := accountIDParam(g)
	if err != nil {
		c.fail(g, err)
		return
	}
	if err := c.cfg.Management.DisableAccount(g.Request.Context(), sessionOf(g).principal, id); err != nil {
		c.fail(g, err)
		return
	}
	g.Redirect(http.StatusSeeOther, fmt.Sprintf("%s/admin/accounts?disabled=%d", Path, id))
}

// tokensView is one account's live tokens (never a token itself).
type tokensView struct {
	AccountID int64
	Items     []ports.Token
	Pager     pager
	Own       bool // the signed-in account's own tokens
	OwnToken  int64
	Expires   string // what was typed when the issue was refused
}

// accountTokens lists an account's tokens, paged, with the issue form and a revoke button each
// (instance administrator, as GET/POST /api/admin/accounts/{id}/tokens).
func (c *console) accountTokens(g *gin.Context) {
	c.renderTokens(g, http.StatusOK, "", "")
}

func (c *console) renderTokens(g *gin.Context, status int, message, expires string) {
	p := sessionOf(g).principal
	id, err := accountIDParam(g)
	if err != nil {
		c.fail(g, err)
		return
	}
	req := pageOf(g)
	items, total, err := c.cfg.Management.ListTokens(g.Request.Context(), p, id, req)
	if err != nil {
		c.fail(g, err)
		return
	}
	v := tokensView{AccountID: id, Items: items, Pager: newPager(req, total), Own: id == p.AccountID, Expires: expires}
	if v.Own {
		v.OwnToken = p.TokenID
	}
	var notice string
	if revoked, err := strconv.ParseInt(g.Query("revoked"), 10, 64); err == nil && revoked > 0 {
		notice = fmt.Sprintf("Token %d was revoked.", revoked)
		for _, t := range items {
			if t.ID == revoked {
				notice = "" // listed: the notice would not be true
			}
		}
	}
	c.render(g, status, "tokens", page{Title: fmt.Sprintf("Tokens of account %d", id), Notice: notice, Message: message, Data: v})
}

// expiryLayouts are what a datetime-local input posts (read as UTC), and RFC 3339.
var expiryLayouts = []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339}

func parseExpiry(s string) (*time.Time, bool) {
	if s == "" {
		return nil, true
	}
	for _, layout := range expiryLayouts {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return &t, true
		}
	}
	return nil, false
}

// issueToken issues another token for the account and shows it once.
func (c *console) issueToken(g *gin.Context) {
	id, err := accountIDParam(g)
	if err != nil {
		c.fail(g, err)
		return
	}
	expires := strings.TrimSpace(g.PostForm("expiresAt"))
	at, ok := parseExpiry(expires)
	if !ok {
		c.renderTokens(g, http.StatusBadRequest, "The expiry is not a date and time (UTC), e.g. 2027-01-31T12:00.", expires)
		return
	}
	t, err := c.cfg.Management.IssueToken(g.Request.Context(), sessionOf(g).principal, id, at)
	if err != nil {
		if status, code := httperr.Status(err); status == http.StatusBadRequest {
			c.renderTokens(g, status, "The expiry must be in the future ("+code+").", expires)
			return
		}
		c.fail(g, err)
		return
	}
	c.render(g, http.StatusCreated, "secret", page{Title: "Token issued",
		Data: secretView{What: "token", AccountID: t.AccountID, TokenID: t.ID, Token: t.Value, ExpiresAt: t.ExpiresAt}})
}

// revokeToken revokes one token of the account; it fails at once on every server (a session
// signed in with it ends too).
func (c *console) revokeToken(g *gin.Context) {
	id, err := accountIDParam(g)
	if err != nil {
		c.fail(g, err)
		return
	}
	tokenID, err := strconv.ParseInt(g.Param("token"), 10, 64)
	if err != nil || tokenID <= 0 {
		c.fail(g, ports.ErrNotFound)
		return
	}
	if err := c.cfg.Management.RevokeToken(g.Request.Context(), sessionOf(g).principal, id, tokenID); err != nil {
		c.fail(g, err)
		return
	}
	g.Redirect(http.StatusSeeOther, fmt.Sprintf("%s/admin/accounts/%d/tokens?revoked=%d", Path, id, tokenID))
}

// ownTokenView is the signed-in principal's token page.
type ownTokenView struct {
	AdminToken bool  // signed in with the configured administrator token: nothing to rotate here
	AccountID  int64 // set for an instance administrator's account: a link to all its tokens
}

// ownToken is the page of the signed-in account's own token: rotate it (every account, as
// POST /api/me/tokens/rotate), and for an instance administrator's account a link to its list.
func (c *console) ownToken(g *gin.Context) {
	p := sessionOf(g).principal
	v := ownTokenView{AdminToken: p.IsAdminToken()}
	if p.InstanceAdmin && !p.IsAdminToken() {
		v.AccountID = p.AccountID
	}
	c.render(g, http.StatusOK, "owntoken", page{Title: "Your token", Data: v})
}

// rotateOwnToken replaces the token the session was signed in with and shows the new one once.
// The old token stops working when this commits, and the session with it: the answer ends the
// session here (row and cookie) and asks to sign in with the new token.
func (c *console) rotateOwnToken(g *gin.Context) {
	ctx := g.Request.Context()
	t, err := c.cfg.Management.RotateOwnToken(ctx, sessionOf(g).principal)
	if err != nil {
		c.fail(g, err)
		return
	}
	if err := c.cfg.Sessions.Delete(ctx, g.GetString(sessionID)); err != nil && c.cfg.Log != nil {
		// The session no longer finds its token anyway; only the row stays until it expires.
		c.cfg.Log.Errorw("console session delete after rotation failed", "error", fmt.Sprintf("%T", err))
	}
	c.clearCookie(g)
	delete(g.Keys, sessionKey)
	c.render(g, http.StatusOK, "secret", page{Title: "Token rotated",
		Data: secretView{What: "rotated", AccountID: t.AccountID, TokenID: t.ID, Token: t.Value, ExpiresAt: t.ExpiresAt}})
}
