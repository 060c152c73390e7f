package github

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Events GitHub sends about the App's installations. Their handlers create and repair
// connections, so they are stored once, for no workspace, in the system scope.
const (
	eventInstallation             = "installation"
	eventInstallationRepositories = "installation_repositories"
	eventInstallationTarget       = "installation_target"
	eventPing                     = "ping"
)

// Drop reasons: verified work deliveries that no workspace can receive.
const (
	DropWithoutSource     = "work-event-without-source"
	DropNoRepositoryOrOrg = "no-repository-or-organization"
)

// reasonInvalidEventRoute refuses a body that does not have the shape its control event type
// claims (400): a signed work payload relabeled as a control event must not reach the system
// scope, where its handler could create or repair a connection.
const reasonInvalidEventRoute = "invalid-event-route"

// IsControlEvent reports whether eventType is an installation control event.
func IsControlEvent(eventType string) bool {
	switch eventType {
	case eventInstallation, eventInstallationRepositories, eventInstallationTarget:
		return true
	}
	return false
}

// workKeys are top-level keys of work payloads that no control payload carries. GitHub signs
// the body but not the event-type header, so a work body resent under a control event type
// must be recognised by its own shape. GitHub documents that installation_target may name a
// repository, so only the other keys refuse it.
var (
	workKeys       = []string{"repository", "issue", "pull_request", "comment", "review", "commits", "check_run", "check_suite", "workflow_run", "workflow_job"}
	targetWorkKeys = []string{"issue", "pull_request", "comment", "review", "commits", "check_run", "check_suite", "workflow_run", "workflow_job"}
)

// Parse reads a verified GitHub delivery. conn is ignored (GitHub is not per connection).
// Errors: *ports.RejectedError of kind ErrMalformed, or ErrUnauthenticated (wrong-app) for a
// control body of another App.
func (w *Webhook) Parse(req ports.Request, _ *ports.SourceConnection) (contract.Envelope, error) {
	event, err := webhookjson.EventType(eventHeader.get(req.Headers), headerEvent+" is missing", headerEvent)
	if err != nil {
		return contract.Envelope{}, err
	}
	body, err := decodeBody(req.Body)
	if err != nil {
		return contract.Envelope{}, ports.Reject(ports.ErrMalformed, contract.ReasonInvalidPayload, err.Error())
	}
	env := contract.Envelope{EventType: event, Headers: keptHeaders(req.Headers, keptHeaderNames)}
	if event == eventPing {
		env.Immediate = &contract.Immediate{Status: http.StatusOK, ContentType: "application/json", Body: []byte(`{"status":"pong"}`)}
		return env, nil
	}
	keys := SubjectKeyDeriver{}
	if env.DeliveryKey, err = keys.DeliveryKey(req, nil); err != nil { // the key is a header
		return contract.Envelope{}, err
	}
	if action, ok := body.str("action"); ok && webhookjson.ValidEventType(action) {
		env.Action = action
	}
	if IsControlEvent(event) {
		return w.parseControl(env, body, keys)
	}
	return parseWork(env, body, keys)
}

func (w *Webhook) parseControl(env contract.Envelope, body jsonObject, keys SubjectKeyDeriver) (contract.Envelope, error) {
	installationID, err := w.validateControl(env.EventType, body)
	if err != nil {
		return contract.Envelope{}, err
	}
	if env.Subject, err = keys.subject(env.EventType, body); err != nil {
		return contract.Envelope{}, err
	}
	env.Control = true
	env.Route = ports.RouteSpec{SourceKind: KindApp.String(), SourceKey: installationID}
	return env, nil
}

// validateControl proves that the signed body is a control payload of event before it may
// enter the system scope, and returns its installation id. Work payloads carry only a slim
// installation ({id, node_id}); installation and installation_repositories payloads carry the
// full installation with its account, installation_target payloads a target_type and account.
func (w *Webhook) validateControl(event string, body jsonObject) (string, error) {
	refuse := func(format string, args ...any) (string, error) {
		return "", ports.Reject(ports.ErrMalformed, reasonInvalidEventRoute, event+": "+fmt.Sprintf(format, args...))
	}
	inst, ok := body.object("installation")
	if !ok {
		return refuse("body has no installation object")
	}
	id, ok := inst.id("id")
	if !ok {
		return refuse("installation.id is not a positive integer")
	}
	if action, ok := body.str("action"); !ok || action == "" {
		return refuse("body has no action")
	}
	forbidden := workKeys
	if event == eventInstallationTarget {
		forbidden = targetWorkKeys
	}
	for _, k := range forbidden {
		if body.present(k) {
			return refuse("body carries a work payload's %q", k)
		}
	}
	switch event {
	case eventInstallation, eventInstallationRepositories:
		if _, ok := inst.object("account"); !ok {
			return refuse("installation has no account")
		}
		if event == eventInstallationRepositories && (!body.array("repositories_added") || !body.array("repositories_removed")) {
			return refuse("repositories_added and repositories_removed must be arrays")
		}
		if app, ok := inst.id("app_id"); ok && w.appID != 0 && app != strconv.FormatInt(w.appID, 10) {
			return "", ports.Reject(ports.ErrUnauthenticated, reasonWrongApp, "installation of another GitHub App")
		}
	case eventInstallationTarget:
		if tt, ok := body.str("target_type"); !ok || tt == "" {
			return refuse("body has no target_type")
		}
		if _, ok := body.object("account"); !ok {
			return refuse("body has no account")
		}
	}
	return id, nil
}

// parseWork routes a work event: its source is the App installation named by the signed body,
// its recipients are the subscriptions to its repository or organization through the source,
// and, for an event type any reader of the repository sees (ReaderVisible), through any GitHub
// connection (PAT workspaces receive through the App source).
func parseWork(env contract.Envelope, body jsonObject, keys SubjectKeyDeriver) (contract.Envelope, error) {
	installationID, present, ok := body.nestedID("installation")
	if !present {
		// Never fall back to a header: X-GitHub-Hook-Installation-Target-ID is not signed.
		env.DropReason = DropWithoutSource
		return env, nil
	}
	if !ok {
		return contract.Envelope{}, ports.Reject(ports.ErrMalformed, contract.ReasonInvalidPayload, "installation.id is not a positive integer")
	}
	env.Route = ports.RouteSpec{SourceKind: KindApp.String(), SourceKey: installationID,
		RecipientsAnyConnection: ReaderVisible(env.EventType)}
	for _, kind := range []string{ResourceRepository, ResourceOrganization} {
		id, present, ok := body.nestedID(kind)
		if !present {
			continue
		}
		if !ok {
			return contract.Envelope{}, ports.Reject(ports.ErrMalformed, contract.ReasonInvalidPayload, kind+".id is not a positive integer")
		}
		env.Route.Resources = append(env.Route.Resources, ports.Resource{Type: kind, ID: id})
	}
	if len(env.Route.Resources) == 0 {
		// Not the system scope: only control events may live there.
		env.DropReason = DropNoRepositoryOrOrg
		return env, nil
	}
	var err error
	if env.Subject, err = keys.subject(env.EventType, body); err != nil {
		return contract.Envelope{}, err
	}
	return env, nil
}

// SubjectKeyDeriver owns GitHub's delivery key (X-GitHub-Delivery, the same on every
// redelivery) and subjects. A subject names a resource by GitHub's numeric id, never its name,
// so a repository keeps its scope across a rename or a transfer; it never holds the event type,
// action or delivery id, so every event of a repository is ordered in one scope.
type SubjectKeyDeriver struct{}

var _ contract.SubjectKeyDeriver = SubjectKeyDeriver{}

// DeliveryKey is X-GitHub-Delivery. Errors: ErrMalformed (missing-delivery-id, invalid-delivery-id).
func (SubjectKeyDeriver) DeliveryKey(req ports.Request, _ map[string]any) (string, error) {
	return webhookjson.DeliveryKey(strings.TrimSpace(deliveryHeader.get(req.Headers)), headerDelivery+" is missing", headerDelivery)
}

// Subject is github:installation:<id> for a control event (it lands in the one system scope
// anyway), github:repository:<id> for an event with a repository, otherwise
// github:organization:<id>. Errors: ErrMalformed (invalid-event-route for a control event
// without installation.id, invalid-payload for an unusable id, no-repository-or-organization).
func (k SubjectKeyDeriver) Subject(eventType string, body map[string]any) (inbox.Subject, error) {
	return k.subject(eventType, object(body))
}

// nestedIDs reads key.id of a body, decoded (object) or not (members).
type nestedIDs interface {
	nestedID(key string) (id string, present bool, valid bool)
}

func (SubjectKeyDeriver) subject(eventType string, o nestedIDs) (inbox.Subject, error) {
	if IsControlEvent(eventType) {
		id, _, ok := o.nestedID("installation")
		if !ok {
			return inbox.Subject{}, ports.Reject(ports.ErrMalformed, reasonInvalidEventRoute, "control event without installation.id")
		}
		return subject("installation", id)
	}
	for _, kind := range []string{ResourceRepository, ResourceOrganization} {
		id, present, ok := o.nestedID(kind)
		if !present {
			continue
		}
		if !ok {
			return inbox.Subject{}, ports.Reject(ports.ErrMalformed, contract.ReasonInvalidPayload, kind+".id is not a positive integer")
		}
		return subject(kind, id)
	}
	return inbox.Subject{}, ports.Reject(ports.ErrMalformed, DropNoRepositoryOrOrg, "event names neither a repository nor an organization")
}

func subject(kind, id string) (inbox.Subject, error) { return webhookjson.Subject(Provider, kind, id) }
