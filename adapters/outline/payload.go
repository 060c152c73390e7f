package outline

import (
	"net/http"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson"
)

// The tolerant JSON reading and header keeping shared by the webhook adapters.
type object = webhookjson.Object

func decodeObject(body []byte) (object, error) { return webhookjson.Decode(body) }
func validToken(s string, max int) bool        { return webhookjson.ValidToken(s, max) }
func keptHeaders(h http.Header, names []string) map[string]string {
	return webhookjson.KeptHeaders(h, names)
}
func validID(s string) bool { return webhookjson.ValidID(s) }
