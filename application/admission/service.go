// Package admission is the receiving use case. It verifies a webhook delivery, reads the
// delivery's routes and stores it in the inbox once for every workspace that an ACTIVE
// connection admits, all in one transaction, and only then lets the receiver answer.
//
// The order of the steps is the contract: the body is verified before anything reads it,
// validated as UTF-8 JSON without NUL before the provider parses it, and routed under each
// connection's lifecycle lock, so a suspension either commits before admission reads the
// state or waits until the inbox insert has committed.
package admission

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// HeaderSourceServerURL is stored with every row: the exact source URL of the connection the
// row was admitted through, which person erasure matches against its registered namespace.
// It is set here from the connection and never taken from the request.
const HeaderSourceServerURL = "Hephaestus-Source-Server-Url"

// Refusal reasons decided by admission (counted in webhook_rejected_total{provider,reason}).
// Provider adapters and inbox.ValidatePayload add their own.
const (
	ReasonNotFound           = "not-found"           // unknown or wrong-provider connection in the URL
	ReasonTooLarge           = "too-large"           // body over the limit
	ReasonUnreadable         = "unreadable-body"     // the body could not be read to its end
	ReasonUnverified         = "unverified"          // a verifier failed without saying why
	ReasonInvalidPayload     = "invalid-payload"     // a parsed envelope the inbox cannot store
	ReasonNoSource           = "no-source"           // no connection has the signed routing key
	ReasonSourceInactive     = "source-inactive"     // the source connection is not ACTIVE
	ReasonNoSubscriber       = "no-subscriber"       // no workspace subscribes to the resource
	ReasonConnectionInactive = "connection-inactive" // the subscribing connection is not ACTIVE
	ReasonRouteChanged       = "route-changed"       // a connection changed while admission waited
	ReasonUnavailable        = "unavailable"         // the database failed
	ReasonOverloaded         = "overloaded"          // webhook bodies in flight at their byte budget
)

// Reasons lists every refusal reason admission itself decides, beside the providers' own
// (contract.RejectionReasoner) and the payload rule's (inbox.PayloadReasons): the label values of
// webhook_rejected_total{reason} exported at 0 from start.
func Reasons() []string {
	return []string{
		ReasonNotFound, ReasonTooLarge, ReasonUnreadable, ReasonUnverified, ReasonInvalidPayload,
		ReasonNoSource, ReasonSourceInactive, ReasonNoSubscriber, ReasonConnectionInactive,
		ReasonRouteChanged, ReasonUnavailable, ReasonOverloaded,
	}
}

// Outcome is what the receiver answers.
type Outcome int

const (
	// Accepted: stored for at least one workspace, or a duplicate of a stored delivery (202).
	Accepted Outcome = iota + 1
	// Dropped: verified, but refused or dropped by a rule; nothing stored (202).
	Dropped
	// Answered: the provider expects Immediate as the answer; nothing stored.
	Answered
)

// Result is a verified delivery's outcome. Refusals with an HTTP error status are errors.
type Result struct {
	Outcome    Outcome
	Stored     int                 // Accepted: rows stored now
	Duplicates int                 // Accepted: rows that a redelivery found already stored
	Reason     string              // Dropped
	Immediate  *contract.Immediate // Answered
	// DeliveryKey is the provider's delivery id (X-GitHub-Delivery, GitLab's Idempotency-Key
	// or event UUID, Slack's event_id, Outline's envelope id) once the payload parsed: set
	// with every outcome and also beside an error of the admission transaction, so the
	// request's span and log lines can name it; "" when the request was refused before.
	DeliveryKey string
}

// Config configures admission.
type Config struct {
	// DefaultSourceServerURL is stored as Hephaestus-Source-Server-Url on an installation
	// control row that no source connection names yet (its handler creates the connection).
	// The provider module whose installations are control events declares it
	// (contract.InstallationSource); required.
	DefaultSourceServerURL string
	// Rejections, when set, counts every refusal for the rejection log (in memory; see
	// application/rejections). Nil counts nothing there.
	Rejections ports.RejectionCounter
}

// SourceServerURLOfInstallations is the namespace stored on installation rows no connection
// names (DefaultSourceServerURL, canonical): person erasure accepts it as a namespace.
func (c Config) SourceServerURLOfInstallations() string {
	if u, err := provider.CanonicalServerURL(c.DefaultSourceServerURL); err == nil {
		return u
	}
	return c.DefaultSourceServerURL
}

// canonical validates DefaultSourceServerURL and stores it canonical, the spelling every
// connection's URL has (provider.CanonicalServerURL).
func (c *Config) canonical() error {
	u, err := provider.CanonicalServerURL(c.DefaultSourceServerURL)
	if err != nil {
		return fmt.Errorf("admission: DefaultSourceServerURL: %w", err)
	}
	c.DefaultSourceServerURL = u
	return nil
}

// Service admits webhook deliveries. It is safe for concurrent use.
type Service struct {
	cfg       Config
	store     ports.AdmissionStore
	directory ports.ConnectionDirectory
	notifier  ports.Notifier
	metrics   ports.AdmissionMetrics
	log       ports.Logger
	clock     ports.Clock
}

// New validates cfg and builds the service; every dependency is required.
func New(cfg Config, store ports.AdmissionStore, directory ports.ConnectionDirectory,
	notifier ports.Notifier, metrics ports.AdmissionMetrics, log ports.Logger, clock ports.Clock,
) (*Service, error) {
	if err := cfg.canonical(); err != nil {
		return nil, err
	}
	if store == nil || directory == nil || notifier == nil || metrics == nil || log == nil || clock == nil {
		return nil, errors.New("admission: store, directory, notifier, metrics, logger and clock are required")
	}
	return &Service{cfg: cfg, store: store, directory: directory, notifier: notifier,
		metrics: metrics, log: log, clock: clock}, nil
}

// Receive admits one raw delivery of w's provider. The result is returned only after the
// admission transaction committed, so the receiver's 202 follows the commit.
// Errors: *ports.RejectedError of kind ErrNotFound (unknown or wrong-provider connection),
// ErrUnauthenticated (verification failed), ErrMalformed (payload or envelope refused),
// ErrUnavailable (database failure, or reason route-changed: nothing stored, the provider
// retries against the current route); other errors are unexpected (context cancellation).
func (s *Service) Receive(ctx context.Context, w contract.Webhook, req ports.Request) (Result, error) {
	src, err := s.Open(ctx, w, req.ConnectionID, req.Headers)
	if err != nil {
		return Result{}, err
	}
	return s.ReceiveFrom(ctx, w, src, req)
}

// Source is what admission decided about a request before its body was read (Open): the
// URL's connection of a per-connection provider, and that the headers alone did not refuse it.
type Source struct {
	conn   *ports.SourceConnection
	opened bool
}

// Open decides what it can before the request's body is read, so that a request admission
// would refuse anyway holds no body bytes: the URL's connection of a per-connection provider
// must exist (404 otherwise), and a provider that can judge the headers alone
// (contract.HeaderVerifier: its secret is configured, the signature headers are present and well
// formed, GitLab's plain token matches) must not refuse them. A refusal is counted and logged
// like every refusal. Errors: *ports.RejectedError of kind ErrNotFound or ErrUnauthenticated;
// ErrUnavailable for a database failure.
func (s *Service) Open(ctx context.Context, w contract.Webhook, connectionID int64, headers http.Header) (Source, error) {
	p := w.Provider()
	conn, err := s.sourceConnection(ctx, w, connectionID)
	if err != nil {
		s.metrics.Received(p.Label())
		return Source{}, s.refuse(ctx, p, connectionID, "", err)
	}
	if hv, ok := w.(contract.HeaderVerifier); ok {
		if err := hv.VerifyHeaders(headers, conn); err != nil {
			s.metrics.Received(p.Label())
			return Source{}, s.refuse(ctx, p, connectionID, "", rejected(err, ports.ErrUnauthenticated, ReasonUnverified))
		}
	}
	return Source{conn: conn, opened: true}, nil
}

// ReceiveFrom admits one raw delivery whose request Open let through (src), as Receive does.
// Errors: Receive's.
func (s *Service) ReceiveFrom(ctx context.Context, w contract.Webhook, src Source, req ports.Request) (Result, error) {
	p := w.Provider()
	s.metrics.Received(p.Label())
	if req.ReceivedAt.IsZero() {
		req.ReceivedAt = s.clock.Now()
	}
	if !src.opened {
		return Result{}, errors.New("admission: ReceiveFrom needs the Source that Open answered")
	}
	conn := src.conn
	// Verification comes first: nothing reads an unauthenticated body.
	if err := w.Verify(req, conn); err != nil {
		return Result{}, s.refuse(ctx, p, req.ConnectionID, "", rejected(err, ports.ErrUnauthenticated, ReasonUnverified))
	}
	if err := inbox.ValidatePayload(req.Body); err != nil {
		return Result{}, s.refuse(ctx, p, req.ConnectionID, "", payloadRejection(err))
	}
	env, err := w.Parse(req, conn)
	if err != nil {
		return Result{}, s.refuse(ctx, p, req.ConnectionID, "", rejected(err, ports.ErrMalformed, ReasonInvalidPayload))
	}
	// A payload the adapter rewrote (less its credentials) is held to the rule the body was, so
	// an adapter's mistake refuses the delivery rather than storing what the inbox cannot read.
	if env.Payload != nil {
		if err := inbox.ValidatePayload(env.Payload); err != nil {
			return Result{DeliveryKey: env.DeliveryKey}, s.refuse(ctx, p, req.ConnectionID, env.DeliveryKey, payloadRejection(err))
		}
	}
	switch {
	case env.Immediate != nil:
		return Result{Outcome: Answered, Immediate: env.Immediate, DeliveryKey: env.DeliveryKey}, nil
	case env.DropReason != "":
		s.refused(ctx, p, req.ConnectionID, env.DeliveryKey, env.DropReason, "")
		return Result{Outcome: Dropped, Reason: env.DropReason, DeliveryKey: env.DeliveryKey}, nil
	}
	return s.admit(ctx, p, req, conn, env)
}

// RefuseBody refuses a delivery whose body the receiver could not read under the size limit
// (ports.ErrTooLarge with ReasonTooLarge, or ports.ErrMalformed with ReasonUnreadable): it is
// counted and logged like every refusal, and rej is returned for the response.
func (s *Service) RefuseBody(ctx context.Context, w contract.Webhook, connectionID int64, rej error) error {
	p := w.Provider()
	s.metrics.Received(p.Label())
	return s.refuse(ctx, p, connectionID, "", rejected(rej, ports.ErrMalformed, ReasonUnreadable))
}

// sourceConnection finds the URL's connection of a per-connection provider. A connection of
// another provider, or of a kind that receives no webhooks of its own, is as unknown as a
// missing one: the URL must not tell them apart.
func (s *Service) sourceConnection(ctx context.Context, w contract.Webhook, id int64) (*ports.SourceConnection, error) {
	if !w.PerConnection() {
		return nil, nil
	}
	if id <= 0 {
		return nil, ports.Reject(ports.ErrNotFound, ReasonNotFound, "no connection id in the URL")
	}
	conn, err := s.directory.SourceConnection(ctx, id)
	switch {
	case errors.Is(err, ports.ErrNotFound):
		return nil, ports.Reject(ports.ErrNotFound, ReasonNotFound, "no such connection")
	case err != nil:
		return nil, storeFailure("find source connection", err)
	case conn == nil || conn.Kind.Provider() != w.Provider() || !conn.Kind.HasWebhookURL():
		return nil, ports.Reject(ports.ErrNotFound, ReasonNotFound, "connection of another provider or kind")
	}
	return conn, nil
}

// decision is what the admission transaction decided, reported after it ended.
type decision struct {
	dropReason string
	refusals   []refusal // recipients refused beside admitted ones
	stored     int
	duplicates int
}

// refusal is one workspace whose subscribing connections were all inactive.
type refusal struct {
	workspaceID  int64
	connectionID int64
}

func (s *Service) admit(ctx context.Context, p provider.Provider, req ports.Request,
	conn *ports.SourceConnection, env contract.Envelope,
) (Result, error) {
	var d decision
	err := s.store.Admit(ctx, func(ctx context.Context, tx ports.AdmissionTx) error {
		d = decision{} // the store may run this more than once; only the last run's decision holds
		targets, err := s.route(ctx, tx, p, req.ConnectionID, conn, env, &d)
		if err != nil || len(targets) == 0 {
			return err
		}
		rows, err := newRows(p, req, env, targets)
		if err != nil {
			return err
		}
		stored, err := tx.Insert(ctx, rows)
		if err != nil {
			return fmt.Errorf("store delivery: %w", err)
		}
		for _, ok := range stored {
			if ok {
				d.stored++
			} else {
				d.duplicates++
			}
		}
		return nil
	})
	if err != nil {
		return Result{DeliveryKey: env.DeliveryKey}, s.refuse(ctx, p, req.ConnectionID, env.DeliveryKey, storeFailure("admit delivery", err))
	}
	// Committed: everything below reports a decision that holds.
	for _, r := range d.refusals {
		s.refused(ctx, p, r.connectionID, env.DeliveryKey, ReasonConnectionInactive,
			fmt.Sprintf("workspace %d not admitted", r.workspaceID))
	}
	if d.dropReason != "" {
		s.refused(ctx, p, req.ConnectionID, env.DeliveryKey, d.dropReason, "")
		return Result{Outcome: Dropped, Reason: d.dropReason, DeliveryKey: env.DeliveryKey}, nil
	}
	if d.stored > 0 {
		s.notifier.Notify()
	}
	ports.LoggerIn(ctx, s.log).Debugw("webhook admitted", "provider", p.String(), "eventType", env.EventType,
		"deliveryKey", env.DeliveryKey, "stored", d.stored, "duplicates", d.duplicates)
	return Result{Outcome: Accepted, Stored: d.stored, Duplicates: d.duplicates, DeliveryKey: env.DeliveryKey}, nil
}

// refuse counts and logs a refusal error and returns it for the response. An error that is
// no refusal is logged as unexpected (unless the request was cancelled) and returned as is.
func (s *Service) refuse(ctx context.Context, p provider.Provider, connID int64, deliveryKey string, err error) error {
	var rej *ports.RejectedError
	switch {
	case errors.As(err, &rej) && rej.Reason == ReasonUnavailable:
		s.metrics.Rejected(p.Label(), rej.Reason)
		s.logRejection(p, connID, rej.Reason)
		ports.LoggerIn(ctx, s.log).Warnw("webhook admission failed", "provider", p.String(), "reason", rej.Reason,
			"deliveryKey", deliveryKey, "connectionId", connID, "error", err.Error())
	case rej != nil:
		s.refused(ctx, p, connID, deliveryKey, rej.Reason, rej.Detail)
	case !errors.Is(err, context.Canceled):
		ports.LoggerIn(ctx, s.log).Errorw("webhook admission failed unexpectedly", "provider", p.String(),
			"deliveryKey", deliveryKey, "connectionId", connID, "error", err.Error())
	}
	return err
}

// refused counts one refusal and writes the admission log line. Never a secret: the detail
// comes from rules and adapters that name what failed, not the values compared.
func (s *Service) refused(ctx context.Context, p provider.Provider, connID int64, deliveryKey, reason, detail string) {
	s.metrics.Rejected(p.Label(), reason)
	s.logRejection(p, connID, reason)
	ports.LoggerIn(ctx, s.log).Infow("webhook refused", "provider", p.String(), "reason", reason,
		"deliveryKey", deliveryKey, "connectionId", connID, "detail", detail)
}

// logRejection counts a refusal in the rejection log, under its connection when one is known:
// an id the URL named but no connection has (not-found) is counted as no connection, so
// random ids cannot spread the log over keys.
func (s *Service) logRejection(p provider.Provider, connID int64, reason string) {
	if s.cfg.Rejections == nil {
		return
	}
	if reason == ReasonNotFound {
		connID = 0
	}
	s.cfg.Rejections.Refused(p.String(), connID, reason)
}

// rejected keeps a *ports.RejectedError as it is and turns any other error into one of kind
// with reason, so that a port that breaks its error contract still fails closed.
func rejected(err error, kind error, reason string) error {
	var rej *ports.RejectedError
	if errors.As(err, &rej) {
		return err
	}
	return ports.Reject(kind, reason, err.Error())
}

func payloadRejection(err error) error {
	var pe *inbox.PayloadError
	if errors.As(err, &pe) {
		return ports.Reject(ports.ErrMalformed, pe.Reason, err.Error())
	}
	return ports.Reject(ports.ErrMalformed, ReasonInvalidPayload, err.Error())
}

func routeChanged(connID int64) error {
	return ports.Reject(ports.ErrUnavailable, ReasonRouteChanged,
		fmt.Sprintf("connection %d changed while admission waited", connID))
}

// storeFailure makes a database failure (transient, contention or timeout) a 503 that the
// provider retries; refusals pass unchanged, anything else stays unexpected.
func storeFailure(op string, err error) error {
	var rej *ports.RejectedError
	var transient *inbox.TransientError
	switch {
	case errors.As(err, &rej):
		return err
	case errors.As(err, &transient), errors.Is(err, inbox.ErrBusy), errors.Is(err, context.DeadlineExceeded):
		return &ports.RejectedError{Kind: ports.ErrUnavailable, Reason: ReasonUnavailable, Detail: op + ": " + err.Error()}
	}
	return fmt.Errorf("%s: %w", op, err)
}
