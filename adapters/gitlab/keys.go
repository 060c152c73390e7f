package gitlab

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// SubjectKeyDeriver owns GitLab's delivery key and subjects. The key is Idempotency-Key, else
// X-Gitlab-Event-UUID (both kept across GitLab's retries), else a hash of event type and body,
// which an identical redelivery reproduces. A subject names a project or group by its numeric
// id, never its path, so a rename or transfer keeps the scope.
type SubjectKeyDeriver struct{}

var _ contract.SubjectKeyDeriver = SubjectKeyDeriver{}

// DeliveryKey errors: ErrMalformed (invalid-delivery-id for a header that cannot be a key).
func (SubjectKeyDeriver) DeliveryKey(req ports.Request, _ map[string]any) (string, error) {
	for _, name := range []string{headerIdempotency, headerEventUUID} {
		key := strings.TrimSpace(req.Headers.Get(name))
		if key == "" {
			continue
		}
		if !webhookjson.ValidDeliveryID(key) {
			return "", ports.Reject(ports.ErrMalformed, contract.ReasonInvalidDeliveryID, name+" is not a printable token of at most 200 bytes")
		}
		return key, nil
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
	s, err := inbox.NewSubject(Provider.Label(), kind, id)
	if err != nil {
		return inbox.Subject{}, ports.Reject(ports.ErrMalformed, contract.ReasonInvalidPayload, fmt.Sprintf("subject: %v", err))
	}
	return s, nil
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
