package outlineread

import (
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinehandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemirror"
)

var _ outlinemirror.Views = Views{}

// Views is the read API's JSON shaping, for the change feed: a change's data is the document
// exactly as this API shows it.
type Views struct{}

func (Views) Document(d outlinehandlers.Document) any { return toDocumentJSON(d) }
