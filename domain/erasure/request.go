package erasure

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hephaestus-dev/hephaestus/domain/provider"
)

// Limits of a person-erasure request. The identity scope grows at start by the id↔login pairs
// found in matching payloads; maxScopeIdentities bounds that growth, so a request that would
// freeze an unbounded scope is refused instead of silently cut.
const (
	MaxIdentities       = 100
	maxScopeIdentities  = 1000
	maxIdentityValueLen = 200
)

// ErrInvalidRequest: an erasure request that names no provider, no registered source
// namespace, or no identity that can be matched.
var ErrInvalidRequest = errors.New("invalid erasure request")

// ErrUnknownSource: the request's sourceServerUrl is well formed but names no namespace this
// instance has (no connection of the provider with that source, nor the installation
// namespace), so it cannot match anything stored here and is refused before anything starts.
var ErrUnknownSource = errors.New("unknown erasure source")

// Store is one store an erasure pass works on: a provider's mirror ("github-mirror", the
// ordinary source erasure), the change feed (the provider's changes in workspace_change), or
// one of the two inbox stores, the workspace rows and the installation rows (NULL workspace)
// of provider_event.
type Store struct{ s string }

var (
	// WorkspaceInbox is the inbox rows of workspaces.
	WorkspaceInbox = Store{"workspace-inbox"}
	// InstallationInbox is the inbox rows of installations (NULL workspace).
	InstallationInbox = Store{"installation-inbox"}
	// ChangeFeed is the change feed's copy of the read API's views: the changes of the
	// request's provider that name the person, erased after the mirror and before the inbox.
	ChangeFeed = Store{"change-feed"}
)

// InboxStores lists the inbox stores in the order a pass erases them, after the mirrors.
func InboxStores() []Store { return []Store{WorkspaceInbox, InstallationInbox} }

// MirrorStore is the mirror store of provider p: "github-mirror", "gitlab-mirror", ….
func MirrorStore(p provider.Provider) Store {
	if p.IsZero() {
		return Store{}
	}
	return Store{strings.ToLower(p.String()) + "-mirror"}
}

// Plan is the order of one pass: the mirror stores (the ordinary source erasure) first, then
// the two inbox stores, as the seed orders them.
func Plan(mirrors []Store) []Store {
	return append(append([]Store(nil), mirrors...), InboxStores()...)
}

// ParseStore reads a store name as stored and shown ("workspace-inbox", "github-mirror", …).
func ParseStore(s string) (Store, error) {
	for _, st := range append(InboxStores(), ChangeFeed) {
		if st.s == s {
			return st, nil
		}
	}
	if name, ok := strings.CutSuffix(s, "-mirror"); ok {
		if p, err := provider.New(strings.ToUpper(name)); err == nil && strings.ToLower(p.String()) == name {
			return MirrorStore(p), nil
		}
	}
	return Store{}, fmt.Errorf("unknown erasure store %q", s)
}

// String is the store's name in receipts.
func (s Store) String() string { return s.s }

// IsZero reports whether s is the zero Store.
func (s Store) IsZero() bool { return s.s == "" }

// IsInbox tells the two inbox stores from the mirror stores.
func (s Store) IsInbox() bool { return s == WorkspaceInbox || s == InstallationInbox }

// State is the lifecycle state of an erasure request.
type State struct{ s string }

var (
	// Running is an erasure whose passes have not all completed.
	Running = State{"RUNNING"}
	// Done is an erasure whose every pass completed and left nothing to retry.
	Done = State{"DONE"}
	// Failed is an erasure a pass of which failed; resume repeats the passes.
	Failed = State{"FAILED"}
)

// ParseState reads a state as stored ("RUNNING", "DONE", "FAILED").
func ParseState(s string) (State, error) {
	for _, st := range []State{Running, Done, Failed} {
		if st.s == s {
			return st, nil
		}
	}
	return State{}, fmt.Errorf("unknown erasure state %q", s)
}

// String is the state as the API shows it.
func (s State) String() string { return s.s }

// IsZero reports whether s is the zero State.
func (s State) IsZero() bool { return s.s == "" }

// Identity is one account of the person at the provider: its provider id, its login, its
// e-mail address, or several of them. Ids are kept as text ("583231", "U024BE7LH") because
// providers differ in their id types. Ids match exactly; logins and e-mail addresses match
// case-insensitively where the provider treats them so (see the personal-data map).
type Identity struct {
	id    string
	login string
	email string
}

// NewIdentity validates an identity: at least one of id, login and email, each printable text
// of at most 200 bytes without surrounding white space; an email has one '@' inside it.
func NewIdentity(id, login, email string) (Identity, error) {
	if id == "" && login == "" && email == "" {
		return Identity{}, fmt.Errorf("%w: an identity needs an id, a login or an email", ErrInvalidRequest)
	}
	for _, v := range []string{id, login, email} {
		if err := checkIdentityValue(v); err != nil {
			return Identity{}, err
		}
	}
	if email != "" {
		at := strings.IndexByte(email, '@')
		if at <= 0 || at == len(email)-1 || strings.Count(email, "@") != 1 {
			return Identity{}, fmt.Errorf("%w: an identity email is not an address", ErrInvalidRequest)
		}
	}
	return Identity{id: id, login: login, email: email}, nil
}

// RestoreIdentity rebuilds an identity read from storage.
func RestoreIdentity(id, login, email string) Identity {
	return Identity{id: id, login: login, email: email}
}

// ID is the person's provider id, or "".
func (i Identity) ID() string { return i.id }

// Login is the person's provider login, or "".
func (i Identity) Login() string { return i.login }

// Email is the person's e-mail address, or "".
func (i Identity) Email() string { return i.email }

func checkIdentityValue(v string) error {
	if v == "" {
		return nil
	}
	if len(v) > maxIdentityValueLen || !utf8.ValidString(v) {
		return fmt.Errorf("%w: an identity value is longer than %d bytes or not UTF-8", ErrInvalidRequest, maxIdentityValueLen)
	}
	r, _ := utf8.DecodeRuneInString(v)
	l, _ := utf8.DecodeLastRuneInString(v)
	if unicode.IsSpace(r) || unicode.IsSpace(l) {
		return fmt.Errorf("%w: an identity value has surrounding white space", ErrInvalidRequest)
	}
	for _, c := range v {
		if !unicode.IsPrint(c) && c != ' ' {
			return fmt.Errorf("%w: an identity value has a control character", ErrInvalidRequest)
		}
	}
	return nil
}

// Scope is the frozen identity scope of an erasure: whose events of which provider, under which
// registered source namespace (the connection's source server URL that admission stores in
// every row's Hephaestus-Source-Server-Url header). The same person under another namespace is
// someone the request does not name.
type Scope struct {
	provider        provider.Provider
	sourceServerURL string
	identities      []Identity
}

// NewScope validates a request: a provider, an absolute http(s) source server URL without
// credentials, query or fragment (kept in its canonical form, provider.CanonicalServerURL, the
// form connections are registered with), and 1 to MaxIdentities identities. Duplicates are folded. Errors wrap ErrInvalidRequest.
func NewScope(p provider.Provider, sourceServerURL string, identities []Identity) (Scope, error) {
	if p.IsZero() {
		return Scope{}, fmt.Errorf("%w: no provider", ErrInvalidRequest)
	}
	// Connections store their URL canonical, and admission copies it into every row: the
	// request matches in that one spelling ("https://GitHub.com:443/" is "https://github.com").
	sourceServerURL, err := provider.CanonicalServerURL(sourceServerURL)
	if err != nil {
		return Scope{}, fmt.Errorf("%w: sourceServerUrl is not a registered source namespace (%w)", ErrInvalidRequest, err)
	}
	if len(identities) == 0 || len(identities) > MaxIdentities {
		return Scope{}, fmt.Errorf("%w: between 1 and %d identities are required", ErrInvalidRequest, MaxIdentities)
	}
	s := Scope{provider: p, sourceServerURL: sourceServerURL}
	for _, i := range identities {
		if i == (Identity{}) {
			return Scope{}, fmt.Errorf("%w: an empty identity", ErrInvalidRequest)
		}
		s.add(i)
	}
	return s, nil
}

// RestoreScope rebuilds a frozen scope read from storage.
func RestoreScope(p provider.Provider, sourceServerURL string, identities []Identity) Scope {
	s := Scope{provider: p, sourceServerURL: sourceServerURL}
	for _, i := range identities {
		s.add(i)
	}
	return s
}

func (s *Scope) add(i Identity) bool {
	for _, have := range s.identities {
		if have == i {
			return false
		}
	}
	s.identities = append(s.identities, i)
	return true
}

// Provider is the provider whose identities the scope names.
func (s Scope) Provider() provider.Provider { return s.provider }

// SourceServerURL is the canonical provider server the identities belong to.
func (s Scope) SourceServerURL() string { return s.sourceServerURL }

// Identities returns a copy of the scope's identities, the requested ones first.
func (s Scope) Identities() []Identity { return append([]Identity(nil), s.identities...) }

// WithPairs is the scope grown by id↔login pairs found in payloads that the scope matches, so
// that a later rename (new login, same id) or an event that names the person by the other half
// cannot escape the erasure. Pairs need both halves; known pairs add nothing. grew reports
// whether anything was added. Errors: ErrInvalidRequest when the scope would exceed its bound.
func (s Scope) WithPairs(pairs []Identity) (grown Scope, grew bool, err error) {
	grown = Scope{provider: s.provider, sourceServerURL: s.sourceServerURL, identities: s.Identities()}
	for _, p := range pairs {
		if p.id == "" || p.login == "" || checkIdentityValue(p.id) != nil || checkIdentityValue(p.login) != nil {
			continue
		}
		if grown.add(p) {
			grew = true
		}
	}
	if len(grown.identities) > maxScopeIdentities {
		return Scope{}, false, fmt.Errorf("%w: more than %d identities after adding the pairs found in payloads",
			ErrInvalidRequest, maxScopeIdentities)
	}
	return grown, grew, nil
}

// Receipt records one committed pass over one store.
type Receipt struct {
	Store    Store
	Pass     int
	Deleted  int64
	Boundary int64 // the highest row id the pass covered: rows stored later wait for the next pass
	At       time.Time
	// FailedRows are the ids of the inbox rows whose payload the pass could not rewrite (at
	// most MaxFailedRows of them, lowest first): they still name the person, and the pass
	// committed everything else.
	FailedRows []int64
}

// MaxFailedRows bounds the row ids one receipt lists.
const MaxFailedRows = 1000

// MaxRowRetries is how many passes a runner adds on its own, one after the other, while the
// last pass left rows it could not rewrite; then the request ends FAILED (a resume grants as
// many again).
const MaxRowRetries = 5

// RowRetryDelay is how long a runner waits before the n-th (1-based) pass it adds on its own:
// 30 seconds, doubling, at most 10 minutes.
func RowRetryDelay(n int) time.Duration {
	d := 30 * time.Second
	for i := 1; i < n && d < 10*time.Minute; i++ {
		d *= 2
	}
	return min(d, 10*time.Minute)
}

// Request is a person-erasure request of the inbox stores. Passes counts the passes asked for:
// 1 at start, one more for every resume, so a resume repeats the passes even after DONE.
type Request struct {
	id          int64
	scope       Scope
	state       State
	passes      int
	retries     int
	requestedBy int64
	createdAt   time.Time
}

// StoredRequest is the stored form of a request, for RestoreRequest.
type StoredRequest struct {
	ID          int64
	Scope       Scope
	State       State
	Passes      int
	Retries     int
	RequestedBy int64
	CreatedAt   time.Time
}

// RestoreRequest rebuilds a request read from storage.
func RestoreRequest(s StoredRequest) Request {
	return Request{id: s.ID, scope: s.Scope, state: s.State, passes: s.Passes, retries: s.Retries,
		requestedBy: s.RequestedBy, createdAt: s.CreatedAt}
}

// ID is the erasure's id.
func (r Request) ID() int64 { return r.id }

// Scope is the frozen identity scope every pass erases.
func (r Request) Scope() Scope { return r.scope }

// State is where the erasure stands.
func (r Request) State() State { return r.state }

// Passes is how many passes have run, resumes included.
func (r Request) Passes() int { return r.passes }

// Retries counts the passes a runner added on its own since the start or the last resume.
func (r Request) Retries() int { return r.retries }

// RequestedBy is the account that started the erasure (0 for the configured administrator token).
func (r Request) RequestedBy() int64 { return r.requestedBy }

// CreatedAt is when the erasure was started.
func (r Request) CreatedAt() time.Time { return r.createdAt }

// Resume asks for one more pass over every store, whatever the state: the mirrors and the
// inbox are live-predicate stores, so a repeated pass erases what matches now, including
// deliveries stored and mirror rows written after the last pass.
func (r *Request) Resume() {
	r.passes++
	r.retries = 0
	r.state = Running
}

// Settle is the request as its runner lets go of it once every pass asked for has its
// receipts. DONE when the last pass rewrote every row it had to; while it left rows it could
// not rewrite (Receipt.FailedRows), one more pass, still RUNNING, to run after
// RowRetryDelay(Retries()), up to MaxRowRetries such passes; then FAILED, the receipts listing
// the rows that still name the person.
func (r Request) Settle(receipts []Receipt) Request {
	failed := false
	for _, rc := range receipts {
		if rc.Pass == r.passes && len(rc.FailedRows) > 0 {
			failed = true
		}
	}
	switch {
	case !failed:
		r.state = Done
	case r.retries >= MaxRowRetries:
		r.state = Failed
	default:
		r.retries++
		r.passes++
		r.state = Running
	}
	return r
}

// Fail is the request ended FAILED by an error of a pass.
func (r Request) Fail() Request {
	r.state = Failed
	return r
}

// RetryDelay is how long a RUNNING request that Settle gave one more pass waits before a
// runner takes it again; 0 for any other request.
func (r Request) RetryDelay() time.Duration {
	if r.state != Running || r.retries == 0 {
		return 0
	}
	return RowRetryDelay(r.retries)
}

// Next is the pass still to run given the receipts committed so far: the lowest pass number
// first, and within a pass the stores in Plan(mirrors) order (the request's provider's mirror
// stores, then the inbox stores). ok is false when every pass asked for has its receipts.
func (r Request) Next(mirrors []Store, receipts []Receipt) (store Store, pass int, ok bool) {
	plan := Plan(mirrors)
	for pass = 1; pass <= r.passes; pass++ {
		for _, st := range plan {
			if !hasReceipt(receipts, st, pass) {
				return st, pass, true
			}
		}
	}
	return Store{}, 0, false
}

func hasReceipt(receipts []Receipt, st Store, pass int) bool {
	for _, rc := range receipts {
		if rc.Store == st && rc.Pass == pass {
			return true
		}
	}
	return false
}
