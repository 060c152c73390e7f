// Package outlineread serves the Outline mirror to the members of a workspace:
//
//	GET /api/workspaces/{ws}/outline/documents
//
// paged like every list of the API, most recently updated first; every query binds the
// workspace.
package outlineread

import (
	"context"
	"errors"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/http/httperr"
	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemodel"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Store reads the Outline mirror; adapters/outline/outlinemirror.Store is one.
type Store interface {
	// ListDocuments errors: database failures.
	ListDocuments(ctx context.Context, ws int64, page ports.PageRequest) ([]outlinemodel.Document, int, error)
}

type api struct {
	store Store
	log   ports.Logger
}

// Config is what the routes need.
type Config struct {
	Auth    managementapi.Authenticator
	Members managementapi.Members
	Store   Store
	// Log receives the cause of 500 answers (nil: not logged).
	Log ports.Logger
}

// Register adds the read routes to r. Errors: a missing dependency.
func Register(r gin.IRouter, cfg Config) error {
	if cfg.Auth == nil || cfg.Members == nil || cfg.Store == nil {
		return errors.New("outlineread: an authenticator, a member directory and a store are required")
	}
	a := api{store: cfg.Store, log: cfg.Log}
	g := managementapi.MemberRoutes(r, cfg.Auth, cfg.Members, "/outline")
	g.GET("/documents", a.documents)
	return nil
}

func (a api) fail(c *gin.Context, err error) {
	httperr.WriteLogged(c, err, a.log, "outline mirror read failed")
}

type documentJSON struct {
	ID               string  `json:"id"`
	CollectionID     *string `json:"collectionId"`
	ParentDocumentID *string `json:"parentDocumentId"`
	Title            string  `json:"title"`
	URLID            string  `json:"urlId"`
	Revision         int64   `json:"revision"`
	PublishedAt      *string `json:"publishedAt"`
	ArchivedAt       *string `json:"archivedAt"`
	UpdatedAt        *string `json:"updatedAt"`
}

func toDocumentJSON(d outlinemodel.Document) documentJSON {
	var updated *time.Time
	if !d.Version.UpdatedAt.IsZero() {
		updated = &d.Version.UpdatedAt
	}
	return documentJSON{
		ID: d.ID, CollectionID: optional(d.CollectionID), ParentDocumentID: optional(d.ParentDocumentID),
		Title: d.Title, URLID: d.URLID, Revision: d.Version.Revision, PublishedAt: timestamp(d.PublishedAt),
		ArchivedAt: timestamp(d.ArchivedAt), UpdatedAt: timestamp(updated),
	}
}

func (a api) documents(c *gin.Context) {
	if err := managementapi.WriteList(c, managementapi.MemberWorkspaceOf(c).ID, a.store.ListDocuments, toDocumentJSON); err != nil {
		a.fail(c, err)
	}
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func timestamp(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := t.UTC().Format(time.RFC3339)
	return &s
}
