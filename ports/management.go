package ports

import (
	"context"
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/workspace"
)

// InstanceAdminAccountID is the account id of the principal authenticated by the configured
// instance administrator token. No account row has it (identities start at 1), so an audit
// record that names it unambiguously means "the instance administrator token".
const InstanceAdminAccountID int64 = 0

// Principal is an authenticated caller of the management API: an account (AccountID ≥ 1,
// authenticated by its token TokenID) or the configured instance administrator token
// (AccountID InstanceAdminAccountID, no TokenID).
type Principal struct {
	AccountID     int64
	InstanceAdmin bool
	TokenID       int64
}

// IsAdminToken reports whether p is the configured instance administrator token, which is no
// account: audit records name it as such, never as an account id.
func (p Principal) IsAdminToken() bool {
	return p.InstanceAdmin && p.AccountID == InstanceAdminAccountID
}

// PageRequest is one page of a list: Page counts from 0, Size is at least 1.
type PageRequest struct {
	Page int
	Size int
}

// Offset is the number of rows before the page.
func (p PageRequest) Offset() int { return p.Page * p.Size }

// Workspace is a workspace as the management API shows it.
type Workspace struct {
	ID        int64
	Slug      string
	Name      string
	State     string
	CreatedAt time.Time
}

// Account is an account as the management API shows it; its token is never stored.
type Account struct {
	ID            int64
	Login         string
	InstanceAdmin bool
	CreatedAt     time.Time
	// DisabledAt is when the account was disabled (nil: enabled); only ListAccounts sets it,
	// every other read finds enabled accounts only.
	DisabledAt *time.Time
}

// Member is one member of a workspace as its administrators list it.
type Member struct {
	AccountID int64
	Login     string
	Role      workspace.Role
	// Disabled: the account is disabled (its tokens no longer work; the membership stays).
	Disabled bool
}

// Membership is one account's role in one workspace.
type Membership struct {
	WorkspaceID int64
	AccountID   int64
	Role        workspace.Role
}

// Invitation is a pending invitation to a workspace as the invited account lists it.
type Invitation struct {
	ID        int64
	Workspace Workspace
	Role      workspace.Role
	// InvitedBy is the inviting account's login; "" for the instance administrator token.
	InvitedBy string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// Joined is the membership an accepted invitation leaves: the workspace and the account's role
// in it.
type Joined struct {
	Workspace  Workspace
	Membership Membership
}

// Token is one bearer token of an account as it is listed: never the token, nor its hash.
type Token struct {
	ID         int64
	AccountID  int64
	CreatedAt  time.Time
	ExpiresAt  *time.Time // nil: never expires
	LastUsedAt *time.Time // nil: never used; written at most once a minute
}

// TokenOwner is the account a presented token belongs to, and which of its tokens it is.
type TokenOwner struct {
	Account Account
	TokenID int64
}

// AccountStore keeps accounts and their tokens, found by the SHA-256 hash of a token (the hash
// is the index key, so a lookup leaks nothing about the token). No implementation caches a
// token: a revoked, expired or disabled account's token fails at its next use on every server.
type AccountStore interface {
	// CreateAccount stores an account with its first token's hash. Errors: ErrConflict when the
	// login exists.
	CreateAccount(ctx context.Context, login string, instanceAdmin bool, tokenHash []byte) (Account, error)
	// TokenOwner finds the enabled account whose live (not expired) token hashes to tokenHash,
	// and records the token's use when its last recorded use is more than a minute old.
	// Errors: ErrNotFound.
	TokenOwner(ctx context.Context, tokenHash []byte) (TokenOwner, error)
	// Account reads an enabled account. Errors: ErrNotFound (also for a disabled account).
	Account(ctx context.Context, id int64) (Account, error)
	// LiveToken finds the account's token tokenID while it still authenticates: not revoked
	// or rotated (both delete the row), not expired, and the account enabled. It records no
	// use. Errors: ErrNotFound when it no longer authenticates.
	LiveToken(ctx context.Context, accountID, tokenID int64) (TokenOwner, error)
	// IssueToken adds a token to an enabled account. Errors: ErrNotFound (no such account);
	// ErrConflict "account-disabled"; ErrMalformed "invalid-expires-at" for an expiry that is not
	// in the future (database time).
	IssueToken(ctx context.Context, accountID int64, tokenHash []byte, expiresAt *time.Time) (Token, error)
	// ListTokens pages the account's live tokens in id order and counts them. Errors:
	// ErrNotFound.
	ListTokens(ctx context.Context, accountID int64, page PageRequest) ([]Token, int, error)
	// RevokeToken deletes one token of the account. Errors: ErrNotFound.
	RevokeToken(ctx context.Context, accountID, tokenID int64) error
	// ReplaceToken replaces tokenID of the account by a token with newHash and the same expiry,
	// in one transaction. Errors: ErrNotFound when tokenID is no longer a live token of it (a
	// concurrent rotation or revocation won).
	ReplaceToken(ctx context.Context, accountID, tokenID int64, newHash []byte) (Token, error)
	// DisableAccount marks the account disabled and deletes its tokens; the row stays, so
	// audit records keep its id and login. Disabling twice is not an error. Errors: ErrNotFound.
	DisableAccount(ctx context.Context, accountID int64) error
	// ListAccounts pages every account, enabled and disabled, in id order and counts them.
	ListAccounts(ctx context.Context, page PageRequest) (items []Account, total int, err error)
}

// WorkspaceStore keeps workspaces and their members.
type WorkspaceStore interface {
	// CreateWorkspace stores an ACTIVE workspace. Errors: ErrConflict when the slug exists.
	CreateWorkspace(ctx context.Context, slug, name string) (Workspace, error)
	// DeleteWorkspace deletes the workspace; its members, connections, subscriptions, inbox
	// rows and their steps go with it. It suspends the workspace's connections first (committed),
	// then deletes the inbox in batches, so it never holds a lock admission needs for long.
	// Errors: ErrNotFound.
	DeleteWorkspace(ctx context.Context, id int64) error
	// WorkspaceBySlug finds a workspace. Errors: ErrNotFound.
	WorkspaceBySlug(ctx context.Context, slug string) (Workspace, error)
	// ListWorkspaces pages all workspaces in id order and counts them.
	ListWorkspaces(ctx context.Context, page PageRequest) (items []Workspace, total int, err error)
	// MemberWorkspaces pages the workspaces accountID is a member of, in id order, and counts
	// them.
	MemberWorkspaces(ctx context.Context, accountID int64, page PageRequest) (items []Workspace, total int, err error)
	// MemberRole is accountID's role in workspaceID. Errors: ErrNotFound when it is no member.
	MemberRole(ctx context.Context, workspaceID, accountID int64) (workspace.Role, error)
	// SetMemberRole makes accountID a member of workspaceID with role, or changes its role;
	// demoting the workspace's last ADMIN is refused under the same lock as RemoveMember.
	// Errors: ErrNotFound when the account or the workspace does not exist; ErrConflict
	// "last-admin".
	SetMemberRole(ctx context.Context, workspaceID, accountID int64, role workspace.Role) (Membership, error)
	// ChangeMemberRole changes the role of accountID, a member of workspaceID, and never adds
	// a member; demoting the workspace's last ADMIN is refused as SetMemberRole refuses it.
	// Errors: ErrNotFound when accountID is no member (whether or not the account exists);
	// ErrConflict "last-admin".
	ChangeMemberRole(ctx context.Context, workspaceID, accountID int64, role workspace.Role) (Membership, error)
	// Invite stores, or refreshes when one is pending, the invitation of login to workspaceID
	// with role, expiring lifetime after now (database time); invitedBy is the inviting account
	// (InstanceAdminAccountID: the instance administrator token). The login need not name an
	// account: it is stored all the same. Nothing is stored when an account with the login is
	// a member already. Errors: ErrNotFound when the workspace does not exist.
	Invite(ctx context.Context, workspaceID int64, login string, role workspace.Role, invitedBy int64, lifetime time.Duration) error
	// PendingInvitations pages the pending, unexpired invitations of accountID's login in id
	// order and counts them.
	PendingInvitations(ctx context.Context, accountID int64, page PageRequest) (items []Invitation, total int, err error)
	// AcceptInvitation accepts invitationID for accountID in one transaction: the invitation is
	// marked accepted and the account becomes a member with its role (a member already keeps
	// its role). Errors: ErrNotFound when it is no pending, unexpired invitation of the
	// account's login (someone else's, expired, accepted already or unknown: one answer).
	AcceptInvitation(ctx context.Context, accountID, invitationID int64) (Joined, error)
	// RemoveMember removes accountID from workspaceID, unless it is the workspace's last ADMIN
	// (decided under a lock on the workspace's ADMIN rows, so two concurrent removals cannot
	// both pass). Errors: ErrNotFound when it is no member; ErrConflict "last-admin".
	RemoveMember(ctx context.Context, workspaceID, accountID int64) error
	// ListMembers pages the members of workspaceID, with their logins, in account id order
	// and counts them.
	ListMembers(ctx context.Context, workspaceID int64, page PageRequest) (items []Member, total int, err error)
}

// StoredConnection is a connection as the management API shows it. It carries no secret.
type StoredConnection struct {
	ID              int64
	WorkspaceID     int64
	Kind            connection.Kind
	State           connection.State
	SourceServerURL string
	Config          map[string]any
	ConfigVersion   int64
	// HasSecret: the connection has a stored secret (a PAT connection without one receives
	// nothing: its subscriptions cannot be verified).
	HasSecret bool
	// HasAPIToken: the connection holds a provider API token (a kind with
	// connection.Kind.AcceptsAPIToken), which its sync jobs read with.
	HasAPIToken bool
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// NewConnection is a connection to create. SealSecret, when set, seals the secret for the id
// the store gives the new connection (SecretBox.Seal binds a secret to its connection, so the
// id must exist first); SecretCiphertext is then ignored. SourceKey is the provider module's
// routing key.
type NewConnection struct {
	WorkspaceID      int64
	Kind             connection.Kind
	SourceServerURL  string
	Config           map[string]any
	SourceKey        string
	SecretCiphertext []byte
	SealSecret       func(connectionID int64) ([]byte, error)
	// SealAPIToken, when set, seals the connection's provider API token for its id, as
	// SealSecret does.
	SealAPIToken func(connectionID int64) ([]byte, error)
}

// SubscribedResource is one resource a workspace monitors through a connection, with whether
// the provider vouches for the workspace's access to it (only Verified routes deliveries).
type SubscribedResource struct {
	Type string
	ID   string
	Name string
	// Access, AccessReason (why not Verified) and AccessCheckedAt (nil: the provider vouches at
	// admission, or never checked) as stored; the management service sets them before storing.
	Access          connection.Access
	AccessReason    string
	AccessCheckedAt *time.Time
}

// ConnectionStore keeps a workspace's connections and subscriptions. Every method binds the
// workspace: a connection of another workspace is ErrNotFound.
type ConnectionStore interface {
	// CreateConnection stores an ACTIVE connection. Errors: ErrNotFound when the workspace is
	// gone; a *RejectedError of kind ErrConflict with reason "installation-already-connected"
	// when a live GITHUB_APP connection already has the source key, "team-already-connected"
	// when a live SLACK connection already has it (both enforced by unique indexes).
	CreateConnection(ctx context.Context, c NewConnection) (StoredConnection, error)
	// ListConnections pages the workspace's connections in id order and counts them.
	ListConnections(ctx context.Context, workspaceID int64, page PageRequest) (items []StoredConnection, total int, err error)
	// Connection reads one connection of the workspace. Errors: ErrNotFound.
	Connection(ctx context.Context, workspaceID, id int64) (StoredConnection, error)
	// Transition takes the connection's lifecycle lock (the row, FOR UPDATE: it waits for the
	// admissions holding it FOR SHARE), calls next with the state read under the lock and
	// stores the state it returns. Errors: ErrNotFound; next's error (nothing changes); the
	// installation conflict of CreateConnection when a reactivation collides.
	Transition(ctx context.Context, workspaceID, id int64, next func(current connection.State) (connection.State, error)) (StoredConnection, error)
	// ReplaceSubscriptions replaces the connection's subscription set under the same lifecycle
	// lock and bumps its config_version in that transaction, so an admission that waited on
	// the lock sees the route changed. Errors: ErrNotFound.
	ReplaceSubscriptions(ctx context.Context, workspaceID, id int64, resources []SubscribedResource) ([]SubscribedResource, error)
	// Subscriptions reads the connection's subscription set. Errors: ErrNotFound.
	Subscriptions(ctx context.Context, workspaceID, id int64) ([]SubscribedResource, error)
	// ReplaceSecret stores the connection's new sealed secret under its lifecycle lock and
	// bumps its config_version (an admission verified with the old secret answers 503 and the
	// provider retries). access gives the verdicts of a credential check made with the new
	// secret, by resource type and id; every other subscription of the connection becomes
	// UNVERIFIED with reason unchecked (it was set while the check ran) when access is not nil.
	// Errors: ErrNotFound.
	ReplaceSecret(ctx context.Context, workspaceID, id int64, sealed []byte, access []SubscribedResource, unchecked string) (StoredConnection, error)
	// SealedSecret reads the connection's sealed secret (nil when it has none), for a use case
	// that checks the provider with it. Errors: ErrNotFound.
	SealedSecret(ctx context.Context, workspaceID, id int64) ([]byte, error)
	// ReplaceAPIToken stores the connection's new sealed provider API token under its
	// lifecycle lock. access, when not nil, gives the verdicts of a check of the subscriptions
	// made with the new token (as for ReplaceSecret, unchecked marks the others); config_version
	// then moves, since routes read the access. Errors: ErrNotFound.
	ReplaceAPIToken(ctx context.Context, workspaceID, id int64, sealed []byte, access []SubscribedResource, unchecked string) (StoredConnection, error)
	// SealedAPIToken reads the connection's sealed provider API token (nil when it has none),
	// for a use case that checks the provider with it. Errors: ErrNotFound.
	SealedAPIToken(ctx context.Context, workspaceID, id int64) ([]byte, error)
}

// SecretBox encrypts connection secrets at rest, each bound to its connection: a sealed value
// moved to another connection's row does not open. Implementations never log a key or a
// plaintext.
type SecretBox interface {
	// Seal encrypts plaintext for connection connectionID; two seals of the same plaintext
	// differ.
	Seal(connectionID int64, plaintext []byte) ([]byte, error)
	// Open decrypts what Seal returned for the same connection. Errors: a sealed value that is
	// truncated, tampered with, sealed for another connection or under an unknown key.
	Open(connectionID int64, sealed []byte) ([]byte, error)
}
