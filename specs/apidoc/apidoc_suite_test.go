package apidoc_test

import (
	"testing"

	"github.com/hephaestus-dev/hephaestus/specs/support"
)

func TestAPIDocument(t *testing.T) {
	support.RunSpecs(t, "API document: OpenAPI 3.1 that every route and every answer of the API specs matches")
}
