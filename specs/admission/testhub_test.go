package admission_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"

	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Two fake providers stand in for the real adapters, so these specs pin admission alone:
// TESTHUB posts every installation to one URL signed with an app secret and routes by the
// installation in the signed body (GitHub-like; PAT workspaces receive through the App);
// TESTLAB posts to one URL per connection, signed with that connection's secret
// (GitLab/Outline-like).
var (
	testHub = provider.MustNew("TESTHUB")
	testLab = provider.MustNew("TESTLAB")

	kindHubApp = connection.MustKind(connection.KindSpec{Name: "TESTHUB_APP", Provider: testHub})
	kindHubPAT = connection.MustKind(connection.KindSpec{Name: "TESTHUB_PAT", Provider: testHub})
	kindLab    = connection.MustKind(connection.KindSpec{Name: "TESTLAB_HOOK", Provider: testLab, WebhookURL: true, RequireSecret: true})
	kinds      = map[string]connection.Kind{kindHubApp.String(): kindHubApp, kindHubPAT.String(): kindHubPAT, kindLab.String(): kindLab}
)

const (
	appSecret       = "app-secret-never-stored"
	headerSignature = "X-Testhub-Signature"
	headerDelivery  = "X-Testhub-Delivery"
)

// hubBody is the JSON a fake delivery carries; the fake adapter routes by it.
type hubBody struct {
	Event          string         `json:"event"`
	Installation   string         `json:"installation,omitempty"`
	Control        bool           `json:"control,omitempty"`
	Resources      []hubResource  `json:"resources,omitempty"`
	ConnectionWide bool           `json:"connectionWide,omitempty"`
	Ping           bool           `json:"ping,omitempty"`
	Drop           string         `json:"drop,omitempty"`
	Relabeled      bool           `json:"relabeled,omitempty"`
	Extra          map[string]any `json:"extra,omitempty"`
}

type hubResource struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// fakeWebhook is a careless but honest adapter: it verifies and routes correctly, but keeps
// every request header with the row, so the specs prove that admission, not the adapter,
// keeps credentials and a forged source URL out of the inbox.
type fakeWebhook struct {
	p             provider.Provider
	perConnection bool
}

var _ contract.Webhook = (*fakeWebhook)(nil)

func (w *fakeWebhook) Provider() provider.Provider { return w.p }
func (w *fakeWebhook) PerConnection() bool         { return w.perConnection }

func (w *fakeWebhook) Verify(req ports.Request, conn *ports.SourceConnection) error {
	secret := []byte(appSecret)
	if w.perConnection {
		secret = conn.Secret
	}
	got, err := hex.DecodeString(req.Headers.Get(headerSignature))
	if err != nil || !hmac.Equal(got, mac(secret, req.Body)) {
		return ports.Reject(ports.ErrUnauthenticated, "bad-signature", "signature does not match")
	}
	return nil
}

func (w *fakeWebhook) Parse(req ports.Request, _ *ports.SourceConnection) (contract.Envelope, error) {
	var b hubBody
	if err := json.Unmarshal(req.Body, &b); err != nil {
		return contract.Envelope{}, ports.Reject(ports.ErrMalformed, "invalid-payload", err.Error())
	}
	if b.Relabeled {
		return contract.Envelope{}, ports.Reject(ports.ErrMalformed, "invalid-event-route", "work payload labeled as control")
	}
	env := contract.Envelope{EventType: b.Event, DeliveryKey: req.Headers.Get(headerDelivery), Headers: map[string]string{}}
	for name := range req.Headers {
		env.Headers[name] = req.Headers.Get(name)
	}
	switch {
	case b.Ping:
		env.Immediate = &contract.Immediate{Status: http.StatusOK, ContentType: "application/json", Body: []byte(`{"pong":true}`)}
		return env, nil
	case b.Drop != "":
		env.DropReason = b.Drop
		return env, nil
	}
	label := w.p.Label()
	var err error
	if b.Control {
		env.Control = true
		env.Subject, err = inbox.NewSubject(label, "installation", b.Installation)
		env.Route = ports.RouteSpec{SourceKind: kindHubApp.String(), SourceKey: b.Installation}
		return env, err
	}
	subjectID := "connection"
	if len(b.Resources) > 0 {
		subjectID = b.Resources[0].ID
	}
	env.Subject, err = inbox.NewSubject(label, "resource", subjectID)
	for _, r := range b.Resources {
		env.Route.Resources = append(env.Route.Resources, ports.Resource{Type: r.Type, ID: r.ID})
	}
	if w.perConnection {
		env.Route.ConnectionWide = b.ConnectionWide
	} else {
		env.Route.SourceKind, env.Route.SourceKey = kindHubApp.String(), b.Installation
		env.Route.RecipientsAnyConnection = true
	}
	return env, err
}

func mac(secret, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return m.Sum(nil)
}

func sign(secret string, body []byte) string { return hex.EncodeToString(mac([]byte(secret), body)) }
