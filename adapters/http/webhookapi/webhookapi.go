// Package webhookapi is the HTTP side of webhook admission: POST /webhooks/<provider> (or
// /webhooks/<provider>/:connectionId for providers that post per connection). It reads the
// raw body once under the size limit, hands it to admission and writes CONTRACT.md's answer.
package webhookapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/hephaestus-dev/hephaestus/adapters/http/httperr"
	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/application/admission"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// DefaultMaxBytes is HEPHAESTUS_WEBHOOK_MAX_BYTES's default (CONTRACT.md).
const DefaultMaxBytes = 26214400

// Config configures the endpoints.
type Config struct {
	// MaxBytes is the largest body accepted; a larger one is answered 413 (default 25 MiB).
	MaxBytes int64
	// InflightBytes is the budget of body bytes all webhook requests hold at once
	// (HEPHAESTUS_WEBHOOK_INFLIGHT_BYTES, default DefaultInflightBytes), shared out per client
	// with headroom for small bodies (BudgetConfig's defaults); past it or a share, 503 retry.
	InflightBytes int64
	// Budget, when set, is used instead of a new one of InflightBytes: a spec observes it.
	Budget *Budget
}

func (c *Config) setDefaults() {
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.InflightBytes == 0 {
		c.InflightBytes = DefaultInflightBytes
	}
}

func (c Config) validate() error {
	if c.MaxBytes < 1 {
		return fmt.Errorf("webhookapi: MaxBytes must be positive, got %d", c.MaxBytes)
	}
	if c.InflightBytes < firstChunk {
		return fmt.Errorf("webhookapi: InflightBytes must be at least %d, got %d", firstChunk, c.InflightBytes)
	}
	return nil
}

// Hooks are the providers' receiving sides. Each gets its route from its own provider label
// and PerConnection, so adding a provider adds one element here and no code.
type Hooks []contract.Webhook

// Register adds one POST route per hook under /webhooks.
// Errors: an invalid cfg, a missing service or hook, two hooks of one provider.
func Register(r gin.IRouter, svc *admission.Service, hooks Hooks, cfg Config) error {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return err
	}
	if svc == nil {
		return errors.New("webhookapi: an admission service is required")
	}
	budget := cfg.Budget
	if budget == nil {
		var err error
		if budget, err = NewSharedBudget(BudgetConfig{Limit: cfg.InflightBytes, MaxBody: cfg.MaxBytes}); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	for _, w := range hooks {
		if w == nil || w.Provider().IsZero() {
			return errors.New("webhookapi: every hook needs a provider")
		}
		label := w.Provider().Label()
		if seen[label] {
			return fmt.Errorf("webhookapi: two hooks for provider %s", w.Provider())
		}
		seen[label] = true
		h := &handler{svc: svc, hook: w, maxBytes: cfg.MaxBytes, budget: budget, route: "/webhooks/" + label}
		if w.PerConnection() {
			h.route += "/:connectionId"
		}
		h.spanName = http.MethodPost + " " + h.route
		r.POST(h.route, h.receive)
	}
	return nil
}

type handler struct {
	svc      *admission.Service
	hook     contract.Webhook
	maxBytes int64
	budget   *Budget // shared by every hook of the server
	route    string  // the gin route, http.route of the request span
	spanName string
}

// acceptedJSON is CONTRACT.md's accepted answer, {"status":"accepted","stored":N,"duplicates":M}
// in that field order, written without reflection: it is every stored delivery's answer.
func acceptedJSON(stored, duplicates int) []byte {
	b := make([]byte, 0, 64)
	b = append(b, `{"status":"accepted","stored":`...)
	b = strconv.AppendInt(b, int64(stored), 10)
	b = append(b, `,"duplicates":`...)
	b = strconv.AppendInt(b, int64(duplicates), 10)
	return append(b, '}')
}

// jsonContentType is the Content-Type gin's JSON answers carry.
const jsonContentType = "application/json; charset=utf-8"

// droppedBody keeps CONTRACT.md's field order.
type droppedBody struct {
	Status string `json:"status"`
	Reason string `json:"reason"`
}

func (h *handler) receive(c *gin.Context) {
	// The request span is the root of the delivery's trace: a traceparent header the provider
	// sent is not a parent (nothing extracts it), so no caller can attach deliveries to a
	// trace of its own or learn ours.
	ctx, span := telemetry.Tracer().Start(c.Request.Context(), h.spanName, trace.WithNewRoot(),
		trace.WithSpanKind(trace.SpanKindServer))
	defer span.End()
	hook := h.hook
	if span.IsRecording() {
		span.SetAttributes(semconv.HTTPRequestMethodPost, semconv.HTTPRoute(h.route),
			telemetry.AttrProvider.String(h.hook.Provider().Label()))
		defer func() {
			span.SetAttributes(semconv.HTTPResponseStatusCode(c.Writer.Status()))
			if c.Writer.Status() >= http.StatusInternalServerError {
				span.SetStatus(codes.Error, http.StatusText(c.Writer.Status()))
			}
		}()
		hook = tracedHook{Webhook: h.hook, ctx: ctx}
	}
	var connID int64
	if h.hook.PerConnection() {
		// A non-numeric id names no connection: admission answers it as unknown (404).
		connID, _ = strconv.ParseInt(c.Param("connectionId"), 10, 64)
	}
	// What can be refused without the body is refused before a byte of it is read or
	// reserved: an unknown connection (404), a provider without its secret, missing signature
	// headers (401). The rest of the body is not read: the connection closes.
	src, err := h.svc.Open(ctx, h.hook, connID, c.Request.Header)
	if err != nil {
		c.Header("Connection", "close")
		httperr.Write(c, err)
		return
	}
	// The body's bytes stay reserved until the answer is written: admission holds them.
	reader := bodyReader{budget: h.budget, client: ClientOf(c.Request.RemoteAddr)}
	defer reader.Release()
	body, err := reader.read(c.Writer, c.Request, h.maxBytes)
	if err != nil {
		if errors.Is(err, ports.ErrUnavailable) {
			// The rest of the body is not read: close the connection rather than drain it.
			c.Header("Connection", "close")
		}
		httperr.Write(c, h.svc.RefuseBody(ctx, hook, connID, err))
		return
	}
	res, err := h.svc.ReceiveFrom(ctx, hook, src, ports.Request{
		Headers: c.Request.Header, Body: body, ConnectionID: connID, TraceParent: telemetry.TraceParent(ctx),
	})
	if res.DeliveryKey != "" && span.IsRecording() {
		// The provider's own id for the delivery: what its delivery log shows, so an operator
		// finds this trace from it.
		span.SetAttributes(telemetry.AttrDeliveryKey.String(res.DeliveryKey))
	}
	if err != nil {
		httperr.Write(c, err)
		return
	}
	// Receive returns after the admission transaction committed: a 202 follows the commit.
	switch res.Outcome {
	case admission.Accepted:
		c.Data(http.StatusAccepted, jsonContentType, acceptedJSON(res.Stored, res.Duplicates))
	case admission.Dropped:
		c.JSON(http.StatusAccepted, droppedBody{Status: "dropped", Reason: res.Reason})
	case admission.Answered:
		ct := res.Immediate.ContentType
		if ct == "" {
			ct = "application/json"
		}
		c.Data(res.Immediate.Status, ct, res.Immediate.Body)
	default:
		httperr.Write(c, fmt.Errorf("webhookapi: unknown admission outcome %d", res.Outcome))
	}
}

// tracedHook is the request's hook while its span records: verification is a child span
// ("webhook.verify"), whose only attribute beside the provider is whether it passed.
type tracedHook struct {
	contract.Webhook
	ctx context.Context
}

func (t tracedHook) Verify(req ports.Request, conn *ports.SourceConnection) error {
	_, span := telemetry.Tracer().Start(t.ctx, "webhook.verify",
		trace.WithAttributes(telemetry.AttrProvider.String(t.Provider().Label())))
	defer span.End()
	err := t.Webhook.Verify(req, conn)
	span.SetAttributes(attribute.Bool("hephaestus.verified", err == nil))
	if err != nil {
		span.SetStatus(codes.Error, "unverified") // never the verifier's message
	}
	return err
}
