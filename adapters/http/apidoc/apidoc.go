// Package apidoc serves the OpenAPI 3.1 document of the HTTP API at GET /api/openapi.json.
// openapi.yaml next to this file is the one source of truth: it is embedded into the binary,
// turned into JSON once, and validated against the real traffic of the API specs
// (specs/support's validating client) and against the routes the server registers
// (specs/apidoc), so it cannot drift from what the server answers.
package apidoc

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"
	"gopkg.in/yaml.v3"
)

// Path is where the document is served; no token is needed.
const Path = "/api/openapi.json"

//go:embed openapi.yaml
var source []byte

// YAML is the document as written.
func YAML() []byte { return append([]byte(nil), source...) }

// JSON is the document as served: the YAML source as JSON.
func JSON() ([]byte, error) {
	var doc any
	if err := yaml.Unmarshal(source, &doc); err != nil {
		return nil, fmt.Errorf("apidoc: parse openapi.yaml: %w", err)
	}
	out, err := json.Marshal(jsonValue(doc))
	if err != nil {
		return nil, fmt.Errorf("apidoc: encode openapi.json: %w", err)
	}
	return out, nil
}

// jsonValue makes yaml.v3's decoded value encodable as JSON: a mapping whose keys are not all
// strings (an unquoted status code) decodes as map[any]any, which encoding/json refuses.
func jsonValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = jsonValue(e)
		}
		return t
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[fmt.Sprint(k)] = jsonValue(e)
		}
		return m
	case []any:
		for i, e := range t {
			t[i] = jsonValue(e)
		}
		return t
	default:
		return v
	}
}

// Register serves the document at Path. Errors: the embedded source does not parse (a build
// that would serve no document fails at start instead).
func Register(r gin.IRouter) error {
	doc, err := JSON()
	if err != nil {
		return err
	}
	r.GET(Path, func(c *gin.Context) {
		c.Header("Cache-Control", "public, max-age=300")
		c.Data(http.StatusOK, "application/json", doc)
	})
	return nil
}
