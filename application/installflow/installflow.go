// Package installflow runs the provider install flows of CONTRACT.md ("Install flows"): a
// workspace ADMIN asks for an install link (and gets a browser cookie that binds it), the
// provider sends the person back with a code and the signed state, the person confirms the
// workspace the page names (a form with a CSRF token), and the connection is created only when
// the provider itself vouches for it (each provider's contract.InstallFlow asks it, e.g. whether
// the person's user token lists the installation and administers its account, or what an OAuth
// exchange completed). The state is HMAC-signed, bound to the flow, the workspace and the
// principal, expires after an hour and is single-use on every server (its nonce is recorded in
// the database); the callback needs the cookie of that very state, so a link opened in another
// browser completes nothing.
//
// The connection is created through management.Service.CreateVerifiedInstallConnection, the
// same use case the API's connection creation runs, as the instance administrator would: the
// provider's verification stands in for the operator.
package installflow

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// DefaultStateTTL is how long an install link stays valid.
const DefaultStateTTL = time.Hour

// Config configures the flows.
type Config struct {
	// StateKey signs states (at least MinStateKeyLength bytes; every server needs the same).
	StateKey []byte
	// StateTTL is how long a state verifies (default DefaultStateTTL).
	StateTTL time.Duration
}

func (c *Config) setDefaults() {
	if c.StateTTL <= 0 {
		c.StateTTL = DefaultStateTTL
	}
}

func (c Config) validate() error {
	if len(c.StateKey) < MinStateKeyLength {
		return fmt.Errorf("installflow: the state key must have at least %d bytes", MinStateKeyLength)
	}
	return nil
}

// Service runs the install flows. It is safe for concurrent use.
type Service struct {
	cfg    Config
	mgmt   *management.Service
	states ports.InstallStateStore
	flows  []contract.InstallFlow
	clock  ports.Clock
	log    ports.Logger
}

// New builds the service with the providers' flows (names unique).
func New(cfg Config, mgmt *management.Service, states ports.InstallStateStore, flows []contract.InstallFlow,
	clock ports.Clock, log ports.Logger,
) (*Service, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if mgmt == nil || states == nil || clock == nil || log == nil {
		return nil, errors.New("installflow: management, state store, clock and logger are required")
	}
	seen := map[string]bool{}
	for _, f := range flows {
		if f == nil || f.Name() == "" || seen[f.Name()] {
			return nil, errors.New("installflow: every flow needs a name of its own")
		}
		seen[f.Name()] = true
	}
	return &Service{cfg: cfg, mgmt: mgmt, states: states, flows: flows, clock: clock, log: log}, nil
}

// Flows are the providers' flows, for the routes.
func (s *Service) Flows() []contract.InstallFlow { return s.flows }

func notConfigured() error {
	return ports.Reject(ports.ErrConflict, "install-flow-not-configured", "")
}

// Started is a started flow: the provider's install link, and the browser binding the
// callback requires, which the HTTP adapter sets as a cookie (HttpOnly, SameSite=Lax) on the
// answer to the browser that asked.
type Started struct {
	URL     string
	Cookie  string
	Expires time.Time
}

// CookieName is the name of flow's browser-binding cookie.
func CookieName(flow string) string { return "hx_install_" + flow }

// Start is flow's install link for the managed workspace (its ADMIN or the instance
// administrator), with the browser binding. Errors: ports.ErrConflict
// "install-flow-not-configured".
func (s *Service) Start(_ context.Context, flow contract.InstallFlow, m management.Managed) (Started, error) {
	if !flow.Configured() {
		return Started{}, notConfigured()
	}
	nonce, err := newNonce()
	if err != nil {
		return Started{}, fmt.Errorf("install state nonce: %w", err)
	}
	p := m.Principal()
	st := state{
		Provider: flow.Name(), Workspace: m.Workspace().ID, Slug: m.Workspace().Slug,
		Account: p.AccountID, AdminToken: p.IsAdminToken(), Nonce: nonce,
		Expires: s.clock.Now().Add(s.cfg.StateTTL).Unix(),
	}
	// The state names the token that started it; the callback ends the flow once that token no
	// longer authenticates (StarterOf).
	switch {
	case st.AdminToken:
		st.AdminPrint = base64.RawURLEncoding.EncodeToString(s.mgmt.AdminTokenFingerprint(adminPrintKey(s.cfg.StateKey)))
	case p.TokenID > 0:
		st.Token = p.TokenID
	default:
		return Started{}, errors.New("install flow: the principal names no token")
	}
	signed, err := sign(s.cfg.StateKey, st)
	if err != nil {
		return Started{}, err
	}
	cookie, err := signCookie(s.cfg.StateKey, st)
	if err != nil {
		return Started{}, err
	}
	return Started{URL: flow.AuthorizeURL(signed), Cookie: cookie, Expires: st.expiresAt()}, nil
}

// Result is how a callback ended; the HTTP adapter turns it into a page.
type Result = contract.InstallResult

// The results of a callback (contract.InstallResult).
const (
	Confirm          = contract.InstallConfirm
	Connected        = contract.InstallConnected
	InvalidLink      = contract.InstallInvalidLink
	OtherBrowser     = contract.InstallOtherBrowser
	NotListed        = contract.InstallNotListed
	NotAdmin         = contract.InstallNotAdmin
	AlreadyConnected = contract.InstallAlreadyConnected
	Retry            = contract.InstallRetry
	Requested        = contract.InstallRequested
	Declined         = contract.InstallDeclined
	TokenRevoked     = contract.InstallTokenRevoked
)

// Outcome is a callback's result: with Confirm, the workspace to confirm and the form's
// fields (the carried callback parameters, the state and the CSRF token); with Connected, the
// connection and its workspace.
type Outcome struct {
	Result     Result
	Workspace  ports.Workspace
	Form       url.Values
	Connection ports.StoredConnection
}

// Form field names of the confirmation form.
const (
	FieldState = "state"
	FieldCSRF  = "csrf"
)

// refuse logs a refusal with its reason (never a code, token, cookie or state) and returns
// result.
func (s *Service) refuse(flow string, result Result, reason string, st state, err error) Outcome {
	kv := []any{"flow", flow, "result", string(result), "reason", reason}
	if st.Workspace > 0 {
		kv = append(kv, "workspaceId", st.Workspace, "accountId", st.Account, "adminToken", st.AdminToken)
	}
	if err != nil {
		// Error text of the ports carries no secret (their contract); it names the failing step.
		kv = append(kv, "error", err.Error())
	}
	s.log.Warnw("install flow refused", kv...)
	return Outcome{Result: result}
}

// authorise verifies the state and the browser binding (cookie) and re-authorises the state's
// principal for its workspace; it uses nothing. On refusal it returns the outcome to answer.
func (s *Service) authorise(ctx context.Context, flow, raw, cookie string) (management.Managed, state, *Outcome) {
	st, err := verify(s.cfg.StateKey, raw, flow, s.clock.Now())
	if err != nil {
		o := s.refuse(flow, InvalidLink, err.Error(), state{}, nil)
		return management.Managed{}, state{}, &o
	}
	if err := verifyCookie(s.cfg.StateKey, cookie, st, s.clock.Now()); err != nil {
		o := s.refuse(flow, OtherBrowser, err.Error(), st, nil)
		return management.Managed{}, st, &o
	}
	p, err := s.starter(ctx, st)
	if err != nil {
		o := s.refuseStarter(flow, st, err)
		return management.Managed{}, st, &o
	}
	// The person who started the flow must still manage the workspace it was started for.
	m, err := s.mgmt.Manage(ctx, p, st.Slug)
	if err != nil {
		o := s.refuseErr(flow, "workspace-not-managed", st, err)
		return management.Managed{}, st, &o
	}
	if m.Workspace().ID != st.Workspace {
		o := s.refuse(flow, InvalidLink, "workspace-replaced", st, nil)
		return management.Managed{}, st, &o
	}
	return m, st, nil
}

// starter is the principal that started the flow of st, while the token it started with still
// authenticates. Errors: management.Service.InstallPrincipal's.
func (s *Service) starter(ctx context.Context, st state) (ports.Principal, error) {
	var fingerprint []byte
	if st.AdminToken {
		var err error
		// A state without a fingerprint (or with a mangled one) names no token: refused below.
		if fingerprint, err = base64.RawURLEncoding.DecodeString(st.AdminPrint); err != nil || len(fingerprint) == 0 {
			fingerprint = []byte{0}
		}
	}
	return s.mgmt.InstallPrincipal(ctx, st.Account, st.Token, fingerprint, adminPrintKey(s.cfg.StateKey))
}

// refuseStarter refuses a flow whose starting token no longer authenticates (TokenRevoked), or
// as refuseErr does when the check itself failed.
func (s *Service) refuseStarter(flow string, st state, err error) Outcome {
	if errors.Is(err, ports.ErrUnauthenticated) {
		return s.refuse(flow, TokenRevoked, "starter-token-gone", st, nil)
	}
	return s.refuseErr(flow, "principal-gone", st, err)
}

// refuseErr refuses with InvalidLink for the caller's mistakes (not found, forbidden, conflict)
// and Retry for anything else (the database failed).
func (s *Service) refuseErr(flow, reason string, st state, err error) Outcome {
	if errors.Is(err, ports.ErrNotFound) || errors.Is(err, ports.ErrForbidden) || errors.Is(err, ports.ErrConflict) {
		return s.refuse(flow, InvalidLink, reason, st, nil)
	}
	return s.refuse(flow, Retry, reason, st, err)
}

// precheck runs the provider's precheck of the callback's parameters.
func (s *Service) precheck(flow contract.InstallFlow, params url.Values) *Outcome {
	if !flow.Configured() {
		o := s.refuse(flow.Name(), InvalidLink, "flow-not-configured", state{}, nil)
		return &o
	}
	if r := flow.Precheck(params); r != nil {
		if r.Result == Declined {
			// The person cancelled on the provider's page: nothing to refuse.
			return &Outcome{Result: Declined}
		}
		o := s.refuse(flow.Name(), r.Result, r.Reason, state{}, r.Err)
		return &o
	}
	return nil
}

// Review answers the provider's redirect (GET): the provider's precheck, then the state and
// the browser binding, then the person's right to manage the workspace, and then a
// confirmation naming the workspace (Confirm, with the form to post). Nothing is used,
// exchanged with the provider or created here.
func (s *Service) Review(ctx context.Context, flow contract.InstallFlow, query url.Values, cookie string) Outcome {
	if o := s.precheck(flow, query); o != nil {
		return *o
	}
	m, st, refused := s.authorise(ctx, flow.Name(), query.Get(FieldState), cookie)
	if refused != nil {
		return *refused
	}
	form := url.Values{FieldState: {query.Get(FieldState)}, FieldCSRF: {csrfToken(s.cfg.StateKey, st)}}
	for _, k := range flow.Carried() {
		if v := query.Get(k); v != "" {
			form.Set(k, v)
		}
	}
	return Outcome{Result: Confirm, Workspace: m.Workspace(), Form: form}
}

// Finish completes flow with the confirmation form (POST): the state, the browser binding and
// the CSRF token (a refused form uses nothing), the provider's precheck, then the state is used
// (once, on every server), the provider is asked what was installed, and only then the
// connection is created.
func (s *Service) Finish(ctx context.Context, flow contract.InstallFlow, form url.Values, cookie string) Outcome {
	if o := s.precheck(flow, form); o != nil {
		return *o
	}
	m, st, refused := s.authorise(ctx, flow.Name(), form.Get(FieldState), cookie)
	if refused != nil {
		return *refused
	}
	if err := verifyCSRF(s.cfg.StateKey, form.Get(FieldCSRF), st); err != nil {
		return s.refuse(flow.Name(), InvalidLink, err.Error(), st, nil)
	}
	if err := s.states.UseInstallState(ctx, st.Nonce, st.expiresAt()); err != nil {
		return s.refuseErr(flow.Name(), "state-reused", st, err)
	}
	c, r := flow.Complete(ctx, form)
	if r != nil {
		return s.refuse(flow.Name(), r.Result, r.Reason, st, r.Err)
	}
	// Once more after the provider's answer, which can take seconds: a token revoked meanwhile
	// creates nothing.
	if _, err := s.starter(ctx, st); err != nil {
		return s.refuseStarter(flow.Name(), st, err)
	}
	o := s.create(ctx, flow.Name(), st, m, management.ConnectionRequest{
		Kind: c.Kind, SourceServerURL: c.SourceServerURL, Config: c.Config, Secret: c.Secret,
	})
	o.Workspace = m.Workspace()
	return o
}

func (s *Service) create(ctx context.Context, flow string, st state, m management.Managed, req management.ConnectionRequest) Outcome {
	c, err := s.mgmt.CreateVerifiedInstallConnection(ctx, m, req)
	switch {
	case errors.Is(err, ports.ErrConflict):
		// The unique index of live connections per source key decided, also against a
		// concurrent flow on another server.
		return s.refuse(flow, AlreadyConnected, "already-connected", st, nil)
	case errors.Is(err, ports.ErrMalformed):
		// The provider answered ids the provider module refuses: nothing is created.
		return s.refuse(flow, Retry, "provider-answer-invalid", st, nil)
	case err != nil:
		return s.refuse(flow, Retry, "create-connection-failed", st, err)
	}
	s.log.Infow("install flow connected", "flow", flow, "workspaceId", st.Workspace, "accountId", st.Account,
		"adminToken", st.AdminToken, "connectionId", c.ID)
	return Outcome{Result: Connected, Connection: c}
}
