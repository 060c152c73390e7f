// Package credential is the sealed provider credential: the only value a provider client sends
// on a workspace's behalf (CONTRACT.md "Provider access": credentials belong to connections).
//
// A Credential's fields are unexported, so no package can fill one in; the only way to make one
// is an Issuer, and a process has at most one: ClaimIssuer hands it out once and panics on a
// second call. The connection store (adapters/postgres/managementstore) claims it while its
// package is initialised, so any other claim in the service panics at start, and the
// architecture spec "Provider credentials" fails the build on any mention of ClaimIssuer or
// Issuer outside that store (and this package's own specs). Every credential therefore comes
// from a store lookup that binds the workspace and the connection, and a read with an
// instance-wide token or another tenant's secret cannot be written by accident. The one
// package-level variable below is that guarantee, not wiring.
//
// The package imports only the standard library, so a provider client, the kit and the store
// share the type without reaching one another.
package credential

import (
	"strconv"
	"sync/atomic"
)

// Credential is a provider credential of one workspace's own connection. The zero value is no
// credential (IsZero). String and GoString never show the secret, so %v, %+v and %#v of a
// credential, or of a struct holding one, print only its connection; the secret sits behind a
// pointer, so even a struct that holds a credential in an unexported field (whose methods fmt
// cannot call) prints an address, not the token.
type Credential struct {
	workspaceID    int64
	connectionID   int64
	secret         *string
	installationID int64
}

func seal(workspaceID, connectionID, installationID int64, secret string) Credential {
	return Credential{workspaceID: workspaceID, connectionID: connectionID, secret: &secret, installationID: installationID}
}

// Secret is the token to send ("" for the zero credential). Never log it.
func (c Credential) Secret() string {
	if c.secret == nil {
		return ""
	}
	return *c.secret
}

// WorkspaceID is the workspace whose connection the credential belongs to.
func (c Credential) WorkspaceID() int64 { return c.workspaceID }

// ConnectionID is the connection the credential belongs to.
func (c Credential) ConnectionID() int64 { return c.connectionID }

// InstallationID is the GitHub App installation of a minted installation token (0 for any
// other credential): a client that GitHub answers 401 drops that token and mints once again.
func (c Credential) InstallationID() int64 { return c.installationID }

// IsZero reports a credential no issuer produced.
func (c Credential) IsZero() bool { return c.connectionID == 0 }

// String never shows the secret.
func (c Credential) String() string {
	return "credential of connection " + strconv.FormatInt(c.connectionID, 10)
}

// GoString never shows the secret either (%#v).
func (c Credential) GoString() string { return c.String() }

// Issuer makes credentials. Only the one ClaimIssuer returns can: the zero Issuer panics.
type Issuer struct {
	claimed bool
}

// claimed is set by the one successful ClaimIssuer of the process.
var claimed atomic.Bool

// ClaimIssuer returns the process's one Issuer. It panics when the issuer was claimed already:
// the connection store claims it at package initialisation, so a second claimant stops the
// process at start instead of minting credentials of its own.
func ClaimIssuer() Issuer {
	if !claimed.CompareAndSwap(false, true) {
		panic("credential: the issuer is claimed already (only the connection store issues credentials)")
	}
	return Issuer{claimed: true}
}

// Issue makes the credential of workspaceID's connection connectionID with secret (copied, so
// the caller may clear its bytes). It panics on an Issuer that ClaimIssuer did not return.
func (i Issuer) Issue(workspaceID, connectionID int64, secret []byte) Credential {
	i.mustBeClaimed()
	return seal(workspaceID, connectionID, 0, string(secret))
}

// IssueInstallation makes the credential of workspaceID's connection connectionID that holds
// token, an installation token minted for installationID (see Credential.InstallationID).
func (i Issuer) IssueInstallation(workspaceID, connectionID, installationID int64, token string) Credential {
	i.mustBeClaimed()
	return seal(workspaceID, connectionID, installationID, token)
}

func (i Issuer) mustBeClaimed() {
	if !i.claimed {
		panic("credential: an Issuer that ClaimIssuer did not return cannot issue")
	}
}

// SpecCredential is a credential for a spec of a provider client that has no database (a fake
// provider checks which token arrived). It takes the spec's T (GinkgoT() or a testing.TB), and
// the architecture spec "Provider credentials" refuses any call of it outside a _test.go file,
// so production code still gets credentials only from the connection store.
func SpecCredential(t interface{ Helper() }, workspaceID, connectionID int64, secret string) Credential {
	t.Helper()
	return seal(workspaceID, connectionID, 0, secret)
}
