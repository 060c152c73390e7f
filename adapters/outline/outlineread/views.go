package outlineread

import (
	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemirror"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemodel"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/readkit"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

var _ outlinemirror.Views = Views{}

// Views is the read API's JSON shaping, for the change feed: a change's data is the document
// exactly as this API shows it.
type Views struct{}

func (Views) Document(d outlinemodel.Document) any { return toDocumentJSON(d) }

// collectionJSON is a collection for the change feed (this API lists none): shaped like its
// mirror row.
type collectionJSON struct {
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	Description *string `json:"description"`
	URLID       string  `json:"urlId"`
	Archived    bool    `json:"archived"`
	UpdatedAt   *string `json:"updatedAt"`
}

func (Views) Collection(c outlinemodel.Collection) any {
	return collectionJSON{ID: c.ID, Name: c.Name, Description: c.Description, URLID: c.URLID, Archived: c.Archived,
		UpdatedAt: readkit.Updated(c.UpdatedAt)}
}

// PersonFields is Outline's person-data declaration (outline.PersonFields) with the members of
// every view this read API answers with and publishes (readkit.PersonFields). Errors: a
// malformed person tag.
func PersonFields() (contract.PersonFields, error) {
	return readkit.PersonFields(outline.PersonFields(), documentJSON{}, collectionJSON{})
}
