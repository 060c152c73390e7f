package outlineapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

// DocumentsPage is one page of documents.list: the documents as Outline answered them (a JSON
// array, decoded by the handlers' converter) and whether Outline names a next page.
type DocumentsPage struct {
	Documents json.RawMessage
	HasNext   bool
}

// documentsListRequest is documents.list's body. Oldest created first: a document created
// while the backfill pages is appended after the pages already read, and an edit does not move
// a document across pages (as sorting by updatedAt would, shifting an unread one into a page
// already read).
type documentsListRequest struct {
	CollectionID string `json:"collectionId"`
	Offset       int    `json:"offset"`
	Limit        int    `json:"limit"`
	Sort         string `json:"sort"`
	Direction    string `json:"direction"`
}

// CollectionInfo reads one collection (POST collections.info) with token: the collection
// object as Outline answered it. Errors as the package describes.
func (c *Client) CollectionInfo(ctx context.Context, token, collectionID string) (json.RawMessage, error) {
	env, err := c.call(ctx, "collections.info", token, struct {
		ID string `json:"id"`
	}{collectionID})
	if err != nil {
		return nil, err
	}
	if env.Data[0] != '{' {
		return nil, failure("POST collections.info", inbox.ProviderUnreadable, http.StatusOK, errors.New("data is not an object"))
	}
	return env.Data, nil
}

// ListDocuments reads limit documents of collectionID from offset (POST documents.list) with
// token. The page is read alone into memory (at most MaxBodyBytes). Errors as the package
// describes.
func (c *Client) ListDocuments(ctx context.Context, token, collectionID string, offset, limit int) (DocumentsPage, error) {
	env, err := c.call(ctx, "documents.list", token, documentsListRequest{
		CollectionID: collectionID, Offset: offset, Limit: limit, Sort: "createdAt", Direction: "ASC",
	})
	if err != nil {
		return DocumentsPage{}, err
	}
	if len(env.Data) == 0 || env.Data[0] != '[' {
		return DocumentsPage{}, failure("POST documents.list", inbox.ProviderUnreadable, http.StatusOK, errors.New("data is not a list"))
	}
	return DocumentsPage{Documents: env.Data, HasNext: env.Pagination != nil && env.Pagination.NextPath != ""}, nil
}
