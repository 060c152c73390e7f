package gitlab

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
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
	event, err := webhookjson.EventType(req.Headers.Get(headerEvent), headerEvent+" is missing", headerEvent)
	if err != nil {
		return contract.Envelope{}, err
	}
	body, err := webhookjson.ParseBody(req.Body)
	if err != nil {
		return contract.Envelope{}, err
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

// SubjectKeyDeriver owns GitLab's delivery key and subjects. The key is Idempotency-Key, else
// X-Gitlab-Event-UUID (both kept across GitLab's retries), else a hash of event type and body,
// which an identical redelivery reproduces. A subject names a project or group by its numeric
// id, never its path, so a rename or transfer keeps the scope.
type SubjectKeyDeriver struct{}

var _ contract.SubjectKeyDeriver = SubjectKeyDeriver{}

// DeliveryKey errors: ErrMalformed (invalid-delivery-id for a header that cannot be a key).
func (SubjectKeyDeriver) DeliveryKey(req ports.Request, _ map[string]any) (string, error) {
	for _, name := range []string{headerIdempotency, headerEventUUID} {
		if key := strings.TrimSpace(req.Headers.Get(name)); key != "" {
			return webhookjson.DeliveryKey(key, "", name)
		}
	}
	sum := sha256.New()
	sum.Write([]byte(strings.TrimSpace(req.Headers.Get(headerEvent)) + "\n"))
	sum.Write(req.Body)
	return hex.EncodeToString(sum.Sum(nil)), nil
}

// Subject is gitlab:project:<id> when the payload names a project, else gitlab:group:<id> for
// the payload's group. Errors: ErrMalformed (no-project-or-group).
func (SubjectKeyDeriver) Subject(_ string, body map[string]any) (inbox.Subject, error) {
	project, groups := payloadResources(webhookjson.Object(body))
	kind, id := ResourceProject, project
	if project == "" {
		if len(groups) == 0 {
			return inbox.Subject{}, ports.Reject(ports.ErrMalformed, DropNoProjectOrGroup, "payload names neither a project nor a group")
		}
		kind, id = ResourceGroup, groups[0]
	}
	return webhookjson.Subject(Provider, kind, id)
}

// payloadResources reads the project id (project.id, else project_id) and the group ids
// (group.group_id, group_id, project.namespace_id) that the payload names. GitLab's hook
// payloads differ per event and version, so ids that are missing or not numeric are skipped
// rather than refused.
func payloadResources(body webhookjson.Object) (project string, groups []string) {
	projectObj, _ := body.Object("project")
	groupObj, _ := body.Object("group")
	if id, ok := webhookjson.PositiveID(projectObj["id"]); ok {
		project = id
	} else if id, ok := webhookjson.PositiveID(body["project_id"]); ok {
		project = id
	}
	for _, v := range []any{groupObj["group_id"], body["group_id"], projectObj["namespace_id"]} {
		if id, ok := webhookjson.PositiveID(v); ok && !contains(groups, id) {
			groups = append(groups, id)
		}
	}
	return project, groups
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
