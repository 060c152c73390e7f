package gitlab

import (
	"net/http"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson"
)

// object is a decoded JSON object (webhookjson.Object): numbers stay json.Number so that
// large ids keep every digit, and every accessor tolerates any JSON shape.
type object = webhookjson.Object

func decodeObject(body []byte) (object, error) { return webhookjson.Decode(body) }

// idOf reads a positive integer id (webhookjson.PositiveID).
func idOf(v any) (string, bool) { return webhookjson.PositiveID(v) }

func validToken(s string, max int) bool { return webhookjson.ValidToken(s, max) }

func keptHeaders(h http.Header, names []string) map[string]string {
	return webhookjson.KeptHeaders(h, names)
}
