// Package beaconread serves the Beacon mirror to the members of a workspace:
//
//	GET /api/workspaces/{ws}/beacon/incidents
//
// paged like every list of the API, most recently updated first; every query binds the
// workspace. Who may call it: every member of the workspace, ADMIN or MEMBER, and the instance
// administrator (readkit: 401 without a valid token, 403 for a non-member, 404 for an unknown
// workspace). Beacon is the example provider, so the route is in no API document: a real
// provider documents it in adapters/http/apidoc/openapi.yaml.
package beaconread

import (
	"context"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/beacon"
	"github.com/hephaestus-dev/hephaestus/adapters/beacon/beaconmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/beacon/beaconmodel"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/readkit"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Store reads the Beacon mirror; beaconmirror.Store is one.
type Store interface {
	// ListIncidents errors: database failures.
	ListIncidents(ctx context.Context, ws int64, page ports.PageRequest) ([]beaconmodel.Incident, int, error)
}

// Config is what the routes need.
type Config = readkit.Config[Store]

// Register adds the read routes to r. Errors: a missing dependency.
func Register(r gin.IRouter, cfg Config) error {
	return readkit.Mount(r, "beaconread", "/beacon", cfg, func(g *readkit.Group) {
		readkit.List(g, "/incidents", cfg.Store.ListIncidents, toIncidentJSON)
	})
}

// incidentJSON is an incident as the read API and the change feed show it. Every member that
// names a person carries a person tag, so person erasure of the change feed covers it.
type incidentJSON struct {
	ID         string  `json:"id"`
	PageID     string  `json:"pageId"`
	Title      string  `json:"title"`
	Status     string  `json:"status"`
	Impact     string  `json:"impact"`
	AuthorID   *string `json:"authorId" person:"id"`
	AuthorName *string `json:"authorName" person:"name"`
	ResolvedAt *string `json:"resolvedAt"`
	UpdatedAt  *string `json:"updatedAt"`
}

func toIncidentJSON(i beaconmodel.Incident) incidentJSON {
	return incidentJSON{ID: i.ID, PageID: i.PageID, Title: i.Title, Status: i.Status, Impact: i.Impact,
		AuthorID: readkit.Optional(i.AuthorID), AuthorName: readkit.Optional(i.AuthorName),
		ResolvedAt: readkit.Timestamp(i.ResolvedAt), UpdatedAt: readkit.Updated(i.UpdatedAt)}
}

var _ beaconmirror.Views = Views{}

// Views is the read API's shaping for the change feed: a change's data is the incident exactly
// as this API shows it.
type Views struct{}

func (Views) Incident(i beaconmodel.Incident) any { return toIncidentJSON(i) }

// PersonFields is Beacon's person-data declaration (beacon.PersonFields) with the members of
// every view this read API answers with and publishes. Errors: a malformed person tag.
func PersonFields() (contract.PersonFields, error) {
	return readkit.PersonFields(beacon.PersonFields(), incidentJSON{})
}
