package change

import (
	"encoding/json"
	"strings"
)

// memberVisible is, per type of the product's own changes (connection.*), the members of its
// data a MEMBER of the workspace may see: what the rest of the API shows a MEMBER of a
// connection (its id, provider and state; GET …/connections/{id}/sync its resources), never
// what only GET …/connections shows its ADMINs (configuration, team ids, source server URL,
// webhook URL, API token and access details). A connection.* type not listed here shows a
// MEMBER none of its own members, so a new type shows its details only once it is listed.
var memberVisible = map[string][]string{
	ConnectionStateChanged.String(): {"id", "provider", "state"},
	ConnectionTornDown.String():     {"connectionId", "provider", "resources", "everything", "removedChanges"},
}

// alwaysVisible are the members every view keeps: the version a consumer orders by, and the
// tombstones that replace data ({"removed":true}, {"erased":true}).
var alwaysVisible = []string{"version", "removed", "erased"}

// ForMember is s as a MEMBER of its workspace sees it: a change of a provider's entity as it
// is (the read APIs show them to every member), a change of the product's own (connection.*)
// with only the members memberVisible lists. The workspace's ADMINs and the instance
// administrator see every change whole.
func (s Stored) ForMember() Stored {
	if !strings.HasPrefix(s.Type, "connection.") {
		return s
	}
	var all map[string]json.RawMessage
	if json.Unmarshal(s.Data, &all) != nil {
		// Data is a JSON object by construction (New); anything else shows nothing.
		s.Data = json.RawMessage(`{}`)
		return s
	}
	kept := make(map[string]json.RawMessage, len(alwaysVisible)+len(memberVisible[s.Type]))
	for _, names := range [][]string{alwaysVisible, memberVisible[s.Type]} {
		for _, name := range names {
			if v, ok := all[name]; ok {
				kept[name] = v
			}
		}
	}
	data, err := json.Marshal(kept)
	if err != nil {
		data = []byte(`{}`)
	}
	s.Data = data
	return s
}
