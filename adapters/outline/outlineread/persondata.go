package outlineread

import (
	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// viewTypes are every view this read API answers with and publishes to the change feed; their
// `person` struct tags declare the members that name a person (specs/architecture checks that
// every member that sounds like one is tagged).
var viewTypes = []any{documentJSON{}, collectionJSON{}}

// PersonFields is the provider's person-data declaration (outline.PersonFields) with the
// members of this read API's views, so the change feed's erasure covers exactly what the
// views publish. Errors: a malformed person tag.
func PersonFields() (ports.PersonFields, error) {
	f := outline.PersonFields()
	v, err := ports.PersonViewsOf(viewTypes...)
	if err != nil {
		return ports.PersonFields{}, err
	}
	f.Views = &v
	return f, nil
}
