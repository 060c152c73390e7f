package ports

import (
	"context"
	"time"
)

// InstallStateStore makes install-flow states single-use on every server.
type InstallStateStore interface {
	// UseInstallState records that the state with nonce was used; it needs to be remembered
	// until expiresAt, after which the state no longer verifies anyway.
	// Errors: ErrConflict when the nonce was used before (on any server).
	UseInstallState(ctx context.Context, nonce string, expiresAt time.Time) error
}

// GitHubInstallAuthority is GitHub as the GitHub App install flow asks it: who the installing
// person is and which installations they may see. Errors: ErrUnauthenticated when GitHub refuses
// the code or the token (an OAuth error answer); ErrUnavailable for any other failure (transport,
// 5xx, rate limit, an answer that is not the documented shape). Never an error that carries a
// token or code.
type GitHubInstallAuthority interface {
	// ExchangeCode trades the setup URL's code for the person's user access token.
	ExchangeCode(ctx context.Context, code string) (userToken string, err error)
	// UserHasInstallation reports whether GET /user/installations with the user token lists
	// installationID (following its pages).
	UserHasInstallation(ctx context.Context, userToken string, installationID int64) (bool, error)
}

// SlackInstall is what Slack's oauth.v2.access answered for a completed installation.
type SlackInstall struct {
	TeamID   string
	AppID    string
	BotToken string
}

// SlackInstallAuthority is Slack as the Slack install flow asks it. Errors as
// GitHubInstallAuthority's.
type SlackInstallAuthority interface {
	// ExchangeCode trades the callback's code (issued for redirectURI, "" when none was sent)
	// for the installation's team, app and bot token.
	ExchangeCode(ctx context.Context, code, redirectURI string) (SlackInstall, error)
}
