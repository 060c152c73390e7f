package gitlab

import (
	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// DropNoProjectOrGroup: a verified delivery that names neither a project nor a group has no
// scope a workspace could subscribe to.
const DropNoProjectOrGroup = "no-project-or-group"

// Parse reads a verified GitLab delivery of conn (the URL's connection). The event type is
// X-Gitlab-Event as sent ("Merge Request Hook"); object_kind in the body is not cross-checked,
// since its spelling differs per hook. Errors: *ports.RejectedError of kind ErrMalformed.
func (w *Webhook) Parse(req ports.Request, conn *ports.SourceConnection) (contract.Envelope, error) {
	event := req.Headers.Get(headerEvent)
	if event == "" {
		return contract.Envelope{}, ports.Reject(ports.ErrMalformed, contract.ReasonMissingEventType, headerEvent+" is missing")
	}
	if !webhookjson.ValidEventType(event) {
		return contract.Envelope{}, ports.Reject(ports.ErrMalformed, contract.ReasonInvalidEventType, headerEvent+" is not a printable token")
	}
	body, err := webhookjson.Decode(req.Body)
	if err != nil {
		return contract.Envelope{}, ports.Reject(ports.ErrMalformed, contract.ReasonInvalidPayload, err.Error())
	}
	keys := SubjectKeyDeriver{}
	env := contract.Envelope{EventType: event, Headers: webhookjson.KeptHeaders(req.Headers, keptHeaderNames)}
	if env.DeliveryKey, err = keys.DeliveryKey(req, body); err != nil {
		return contract.Envelope{}, err
	}
	env.Action = action(body)

	project, groups := payloadResources(body)
	if project == "" && len(groups) == 0 {
		env.DropReason = DropNoProjectOrGroup
		return env, nil
	}
	if project != "" {
		env.Route.Resources = append(env.Route.Resources, ports.Resource{Type: ResourceProject, ID: project})
	}
	// The hook is installed on the connection's group, so a workspace that subscribes to that
	// group receives events of projects in its subgroups too, whose payloads name only the
	// subgroup.
	if conn != nil {
		if id, ok := webhookjson.PositiveID(conn.Config[configGroupID]); ok && !contains(groups, id) {
			groups = append(groups, id)
		}
	}
	for _, g := range groups {
		env.Route.Resources = append(env.Route.Resources, ports.Resource{Type: ResourceGroup, ID: g})
	}
	if env.Subject, err = keys.Subject(event, body); err != nil {
		return contract.Envelope{}, err
	}
	return env, nil
}

// action is for logs only: object_attributes.action of work items, else event_name of
// group-level hooks (member, subgroup, project).
func action(body webhookjson.Object) string {
	attrs, _ := body.Object("object_attributes")
	for _, v := range []any{attrs["action"], body["event_name"]} {
		if s, ok := v.(string); ok && webhookjson.ValidEventType(s) {
			return s
		}
	}
	return ""
}
