// Package outlineread serves the Outline mirror to the members of a workspace:
//
//	GET /api/workspaces/{ws}/outline/documents
//
// paged like every list of the API, most recently updated first; every query binds the
// workspace. Who may call it: every member of the workspace and the instance administrator
// (readkit).
package outlineread

import (
	"context"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemodel"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/readkit"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Store reads the Outline mirror; adapters/outline/outlinemirror.Store is one.
type Store interface {
	// ListDocuments errors: database failures.
	ListDocuments(ctx context.Context, ws int64, page ports.PageRequest) ([]outlinemodel.Document, int, error)
}

// Config is what the routes need.
type Config = readkit.Config[Store]

// Register adds the read routes to r. Errors: a missing dependency.
func Register(r gin.IRouter, cfg Config) error {
	return readkit.Mount(r, "outlineread", "/outline", cfg, func(g *readkit.Group) {
		readkit.List(g, "/documents", cfg.Store.ListDocuments, toDocumentJSON)
	})
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
	return documentJSON{
		ID: d.ID, CollectionID: readkit.Optional(d.CollectionID), ParentDocumentID: readkit.Optional(d.ParentDocumentID),
		Title: d.Title, URLID: d.URLID, Revision: d.Version.Revision, PublishedAt: readkit.Timestamp(d.PublishedAt),
		ArchivedAt: readkit.Timestamp(d.ArchivedAt), UpdatedAt: readkit.Updated(d.Version.UpdatedAt),
	}
}
