package change_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hephaestus-dev/hephaestus/domain/change"
)

func TestForMember(t *testing.T) {
	for _, tc := range []struct {
		name, typ, data, want string
	}{
		{"a connection's state keeps id, provider, state and version only", "connection.state_changed",
			`{"id":3,"kind":"SLACK","provider":"SLACK","state":"ACTIVE","sourceServerUrl":"https://slack.com",
			  "config":{"teamId":"T1","appId":"A1"},"configVersion":2,"webhookUrl":"/webhooks/slack/3","hasApiToken":true,
			  "access":"UNVERIFIED","accessReason":"token-missing","createdAt":"x","updatedAt":"y","version":"v"}`,
			`{"id":3,"provider":"SLACK","state":"ACTIVE","version":"v"}`},
		{"a teardown keeps what went", "connection.torn_down",
			`{"connectionId":3,"provider":"GITHUB","resources":[{"type":"repository","id":"1"}],"everything":false,"removedChanges":2,"version":"v"}`,
			`{"connectionId":3,"provider":"GITHUB","resources":[{"type":"repository","id":"1"}],"everything":false,"removedChanges":2,"version":"v"}`},
		{"a tombstone stays a tombstone", "connection.state_changed", `{"removed":true}`, `{"removed":true}`},
		{"an unlisted connection type keeps its version only", "connection.renamed",
			`{"id":3,"name":"secret","config":{"teamId":"T1"},"version":"v"}`, `{"version":"v"}`},
		{"a provider's entity is shown whole", "github.issue.upserted",
			`{"id":1,"title":"t","config":{"x":1},"version":"v"}`, `{"id":1,"title":"t","config":{"x":1},"version":"v"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := change.Stored{ID: 7, Type: tc.typ, Subject: "s", Data: json.RawMessage(tc.data)}
			got := in.ForMember()
			var g, w any
			if err := json.Unmarshal(got.Data, &g); err != nil {
				t.Fatalf("ForMember data %s: %v", got.Data, err)
			}
			if err := json.Unmarshal([]byte(tc.want), &w); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("ForMember(%s) = %s, want %s", tc.data, got.Data, tc.want)
			}
			if got.ID != in.ID || got.Type != in.Type || got.Subject != in.Subject {
				t.Errorf("ForMember changed the change's identity: %+v", got)
			}
		})
	}
}
