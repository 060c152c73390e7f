package contract

import (
	"context"
	"net/url"
)

// InstallResult is how an install callback ended; the HTTP adapter turns it into a page.
type InstallResult string

// The results of an install callback.
const (
	InstallConfirm          InstallResult = "confirm" // the callback checked out: the person confirms the workspace
	InstallConnected        InstallResult = "connected"
	InstallInvalidLink      InstallResult = "invalid-link"      // forged, expired, reused, other workspace, bad parameters, no CSRF token
	InstallOtherBrowser     InstallResult = "other-browser"     // the link was not started in this browser (no or another flow's cookie)
	InstallNotListed        InstallResult = "not-listed"        // the provider does not vouch for the installation being the person's
	InstallNotAdmin         InstallResult = "not-admin"         // the person does not administer the installation's account
	InstallAlreadyConnected InstallResult = "already-connected" // a live connection has the installation or team
	InstallRetry            InstallResult = "retry"             // the provider or the database failed: start again
	InstallRequested        InstallResult = "requested"         // an owner must approve the installation first
	InstallDeclined         InstallResult = "declined"          // the person cancelled on the provider's page
	InstallTokenRevoked     InstallResult = "token-revoked"     // the token that started the flow no longer authenticates
)

// InstallRefusal ends an install callback without a connection: the result shown, a reason
// for the log, and the failure behind it (its text carries no code, token or state).
type InstallRefusal struct {
	Result InstallResult
	Reason string
	Err    error
}

// InstallConnection is the connection a provider vouched for: created as the instance
// administrator would create it, with Secret sealed.
type InstallConnection struct {
	Kind            string
	SourceServerURL string
	Config          map[string]any
	Secret          string
}

// InstallFlow is one provider's install flow as application/installflow runs it: the generic
// flow signs and checks the state, re-authorises the person and creates the connection; the
// provider's part builds the link to its page and asks the provider, with the callback's code,
// what was installed.
type InstallFlow interface {
	// Name is the flow's path segment (POST /api/workspaces/{ws}/connections/{name}/install)
	// and its label in the state, so one flow's state never completes another.
	Name() string
	// Title names the provider on the callback page.
	Title() string
	// CallbackPath is where the provider sends the person's browser back (GET, no bearer).
	CallbackPath() string
	// Configured: the flow's settings are present (otherwise starting it answers 409
	// install-flow-not-configured).
	Configured() bool
	// AuthorizeURL is the provider's install page for the signed state.
	AuthorizeURL(state string) string
	// Precheck reads the callback's query before its state is used; a refusal ends the
	// callback there (a cancelled or a malformed callback).
	Precheck(query url.Values) *InstallRefusal
	// Carried are the callback's parameters the confirmation form carries to Complete (the
	// state is carried by the flow itself).
	Carried() []string
	// Complete asks the provider, after the state was used and the person confirmed, what the
	// callback's code installed.
	Complete(ctx context.Context, query url.Values) (InstallConnection, *InstallRefusal)
}
