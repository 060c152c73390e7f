package change

import "strconv"

// ConnectionTornDown is published by an uninstalled connection's teardown, in the teardown's
// transaction: what it removed from the workspace's mirror, so a consumer drops its copies.
var ConnectionTornDown = MustType("connection.torn_down")

// TornDownResource is one resource a teardown removed with everything tied to it.
type TornDownResource struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// TornDown is the data of a connection.torn_down change. Everything: no live connection of the
// provider is left in the workspace, so all of its mirrored data went (also what no listed
// resource holds: users, organizations, groups). RemovedChanges is how many earlier changes
// of the removed data lost their data ({"removed":true}).
type TornDown struct {
	ConnectionID   int64              `json:"connectionId"`
	Provider       string             `json:"provider"`
	Resources      []TornDownResource `json:"resources"`
	Everything     bool               `json:"everything"`
	RemovedChanges int64              `json:"removedChanges"`
}

// NewTornDown is the connection.torn_down change of connectionID (subject connection:<id>).
func NewTornDown(d TornDown) (Change, error) {
	if d.Resources == nil {
		d.Resources = []TornDownResource{}
	}
	return New(ConnectionTornDown, "connection:"+strconv.FormatInt(d.ConnectionID, 10), d)
}
