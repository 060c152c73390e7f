package outlineread

import (
	"github.com/hephaestus-dev/hephaestus/adapters/outline/handlers"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/outlinemirror"
)

var _ outlinemirror.Views = Views{}

// Views is the read API's JSON shaping, for the change feed: a change's data is the document
// exactly as this API shows it.
type Views struct{}

func (Views) Document(d handlers.Document) any { return toDocumentJSON(d) }
