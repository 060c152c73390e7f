// Package installflow runs the provider install flows of CONTRACT.md ("Install flows"): a
// workspace ADMIN asks for an install link, the provider sends the person back with a code and
// the signed state, and the connection is created only when the provider itself vouches for it
// (each provider's ports.InstallFlow asks it, e.g. which installations the person's user token
// lists, or what an OAuth exchange completed). The state is HMAC-signed, bound to the flow, the
// workspace and the principal, expires after an hour and is single-use on every server (its
// nonce is recorded in the database).
//
// The connection is created through management.Service.CreateVerifiedInstallConnection, the
// same use case the API's connection creation runs, as the instance administrator would: the
// provider's verification stands in for the operator.
package installflow

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/ports"
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
	flows  []ports.InstallFlow
	clock  ports.Clock
	log    ports.Logger
}

// New builds the service with the providers' flows (names unique).
func New(cfg Config, mgmt *management.Service, states ports.InstallStateStore, flows []ports.InstallFlow,
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
func (s *Service) Flows() []ports.InstallFlow { return s.flows }

func notConfigured() error {
	return ports.Reject(ports.ErrConflict, "install-flow-not-configured", "")
}

// newState signs a fresh state for flow, bound to the managed workspace and its caller.
func (s *Service) newState(flow string, m management.Managed) (string, error) {
	nonce, err := newNonce()
	if err != nil {
		return "", fmt.Errorf("install state nonce: %w", err)
	}
	p := m.Principal()
	return sign(s.cfg.StateKey, state{
		Provider: flow, Workspace: m.Workspace().ID, Slug: m.Workspace().Slug,
		Account: p.AccountID, AdminToken: p.IsAdminToken(), Nonce: nonce,
		Expires: s.clock.Now().Add(s.cfg.StateTTL).Unix(),
	})
}

// Start is flow's install link for the managed workspace (its ADMIN or the instance
// administrator). Errors: ports.ErrConflict "install-flow-not-configured".
func (s *Service) Start(_ context.Context, flow ports.InstallFlow, m management.Managed) (string, error) {
	if !flow.Configured() {
		return "", notConfigured()
	}
	st, err := s.newState(flow.Name(), m)
	if err != nil {
		return "", err
	}
	return flow.AuthorizeURL(st), nil
}

// Result is how a callback ended; the HTTP adapter turns it into a page.
type Result = ports.InstallResult

// The results of a callback (ports.InstallResult).
const (
	Connected        = ports.InstallConnected
	InvalidLink      = ports.InstallInvalidLink
	NotListed        = ports.InstallNotListed
	AlreadyConnected = ports.InstallAlreadyConnected
	Retry            = ports.InstallRetry
	Requested        = ports.InstallRequested
	Declined         = ports.InstallDeclined
)

// Outcome is a callback's result, with the connection when Connected.
type Outcome struct {
	Result     Result
	Connection ports.StoredConnection
}

// refuse logs a refusal with its reason (never a code, token or state) and returns result.
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

// claim verifies the state, re-authorises its principal for its workspace and uses its nonce.
// On refusal it returns the outcome to answer.
func (s *Service) claim(ctx context.Context, flow, raw string) (management.Managed, state, *Outcome) {
	st, err := verify(s.cfg.StateKey, raw, flow, s.clock.Now())
	if err != nil {
		o := s.refuse(flow, InvalidLink, err.Error(), state{}, nil)
		return management.Managed{}, state{}, &o
	}
	p, err := s.mgmt.InstallPrincipal(ctx, st.Account, st.AdminToken)
	if err != nil {
		o := s.refuseErr(flow, "principal-gone", st, err)
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
	if err := s.states.UseInstallState(ctx, st.Nonce, st.expiresAt()); err != nil {
		o := s.refuseErr(flow, "state-reused", st, err)
		return management.Managed{}, st, &o
	}
	return m, st, nil
}

// refuseErr refuses with InvalidLink for the caller's mistakes (not found, forbidden, conflict)
// and Retry for anything else (the database failed).
func (s *Service) refuseErr(flow, reason string, st state, err error) Outcome {
	if errors.Is(err, ports.ErrNotFound) || errors.Is(err, ports.ErrForbidden) || errors.Is(err, ports.ErrConflict) {
		return s.refuse(flow, InvalidLink, reason, st, nil)
	}
	return s.refuse(flow, Retry, reason, st, err)
}

// Finish completes flow's callback with its query: the provider's precheck, then the state
// (verified, re-authorised, used once), then the provider's word on what was installed, and only
// then the connection.
func (s *Service) Finish(ctx context.Context, flow ports.InstallFlow, query url.Values) Outcome {
	if !flow.Configured() {
		return s.refuse(flow.Name(), InvalidLink, "flow-not-configured", state{}, nil)
	}
	if r := flow.Precheck(query); r != nil {
		if r.Result == Declined {
			// The person cancelled on the provider's page: nothing to refuse.
			return Outcome{Result: Declined}
		}
		return s.refuse(flow.Name(), r.Result, r.Reason, state{}, r.Err)
	}
	m, st, refused := s.claim(ctx, flow.Name(), query.Get("state"))
	if refused != nil {
		return *refused
	}
	c, r := flow.Complete(ctx, query)
	if r != nil {
		return s.refuse(flow.Name(), r.Result, r.Reason, st, r.Err)
	}
	return s.create(ctx, flow.Name(), st, m, management.ConnectionRequest{
		Kind: c.Kind, SourceServerURL: c.SourceServerURL, Config: c.Config, Secret: c.Secret,
	})
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
