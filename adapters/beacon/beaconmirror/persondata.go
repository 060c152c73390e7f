package beaconmirror

import "github.com/hephaestus-dev/hephaestus/adapters/sqlkit"

// personData is the Beacon mirror's personal-data map: an incident names the author of its
// latest update, a reference erasure removes (NULL, with the name) while the incident stays.
// Parameters: @workspaces (bigint[]), @ids the person's Beacon user ids (text[], exact).
var personData = []sqlkit.PersonRule{
	{Table: "beacon_incident", Where: `author_id = ANY(@ids)`, Set: `author_id = NULL, author_name = NULL`},
}
