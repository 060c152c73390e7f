package console

import "github.com/gin-gonic/gin"

func init() {
	pageNames = append(pageNames, "erasures", "erasureresume", "accounts", "accountdisable", "tokens", "owntoken", "secret", "members")
}

// registerAdministration mounts the administration pages (CONTRACT.md "Console and API
// document": erasure, accounts, members and tokens) on the session group s, whose every POST
// already needs the session's CSRF token. Each page asks the same use case as the API route it
// mirrors, as the session's principal, so its permission is the API's.
func (c *console) registerAdministration(s gin.IRouter) {
	// Who: the instance administrator only, as /api/admin/erasures (the use cases refuse anyone
	// else with 403).
	s.GET("/admin/erasures", c.erasures)
	s.POST("/admin/erasures/preview", c.previewErasure)
	s.POST("/admin/erasures", c.startErasure)
	s.GET("/admin/erasures/:id", c.erasure)
	s.GET("/admin/erasures/:id/resume", c.confirmResume)
	s.POST("/admin/erasures/:id/resume", c.resumeErasure)

	// Who: the instance administrator only, as /api/admin/accounts… (the use cases refuse
	// anyone else with 403).
	s.GET("/admin/accounts", c.accounts)
	s.POST("/admin/accounts", c.createAccount)
	s.GET("/admin/accounts/:account/disable", c.confirmDisable)
	s.POST("/admin/accounts/:account/disable", c.disableAccount)
	s.GET("/admin/accounts/:account/tokens", c.accountTokens)
	s.POST("/admin/accounts/:account/tokens", c.issueToken)
	s.POST("/admin/accounts/:account/tokens/:token/revoke", c.revokeToken)

	// Who: every signed-in account, for its own token (as POST /api/me/tokens/rotate); the
	// configured administrator token has nothing to rotate (409).
	s.GET("/token", c.ownToken)
	s.POST("/token/rotate", c.rotateOwnToken)

	// Who: the workspace's ADMINs and the instance administrator (as
	// PUT/DELETE /api/workspaces/{ws}/members/{accountId} and POST …/invitations:
	// RequireManager). Adding an account by id is the instance administrator's (the use case
	// answers a workspace ADMIN 404 for a non-member); a workspace ADMIN invites by login.
	s.GET("/workspaces/:ws/members", c.members)
	s.POST("/workspaces/:ws/invitations", c.invite)
	s.POST("/workspaces/:ws/members", c.setMember)
	s.POST("/workspaces/:ws/members/:account", c.setMember)
	s.POST("/workspaces/:ws/members/:account/remove", c.removeMember)

	// Who: every signed-in account, for its own invitations (as POST
	// /api/me/invitations/{id}/accept); they are listed on the workspaces page.
	s.POST("/invitations/:id/accept", c.acceptInvitation)
}
