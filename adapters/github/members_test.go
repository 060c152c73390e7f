package github

import (
	"bytes"
	"encoding/json"
	"testing"
)

// decodedObject decodes body the way the adapter once read every delivery (json.Valid, then a
// decoder with UseNumber into a map), the reference the raw member reader must agree with.
func decodedObject(body []byte) (object, error) {
	if !json.Valid(body) {
		return nil, errRefNotJSON
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errRefNotObject
	}
	return object(m), nil
}

var (
	errRefNotJSON   = jsonError("body is not JSON")
	errRefNotObject = jsonError("body is not a JSON object")
)

type jsonError string

func (e jsonError) Error() string { return string(e) }

var memberKeys = []string{"action", "installation", "repository", "organization", "account", "target_type",
	"repositories_added", "repositories_removed", "issue", "id", "app_id", "login", ""}

// FuzzBodyMembers: every accessor of the raw member reader answers what the same accessor of
// the decoded object answers, for any body, at every nesting level it can reach.
func FuzzBodyMembers(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `null`, `"x"`, `1`, ` {"a":1} `, `{"a":1}{"b":2}`, `{"a":1,}`,
		`{"installation":{"id":1},"repository":{"id":"12"}}`,
		`{"installation":{"id":1.0,"account":{},"app_id":42},"action":"created"}`,
		`{"installation":{"id":1e3},"repository":null,"organization":{"id":-1}}`,
		`{"installation":{"id":"7"},"repository":{"id":12},"repository":{"id":13}}`,
		`{"\u0061ction":"opened","installation":{"id":1},"organization":{"id":5}}`,
		`{"action":"a\u00e9\"","installation":{"id":9007199254740993},"repository":{"id":[1]}}`,
		`{"installation" : { "id" : 4 } , "repository" : { "id" : 5 , "x" : [ {"}":"]\\"} ] } }`,
		`{"action":"added","repositories_added":[],"repositories_removed":{},"target_type":"","account":{"id":true}}`,
		"{\"action\":\"op\xffen\",\"installation\":{\"id\":1},\"repository\":{\"id\":2}}",
		"{\"act\xffion\":\"x\",\"id\":\"0x10\",\"app_id\":\"-3\"}",
		`{"action":"created","installation":{"id":1001,"app_id":42,"account":{"id":9,"login":"octo-org"}},"repositories":[{"id":1,"name":"hello"}],"sender":{"id":3}}`,
		`{"action":"opened","issue":{"id":55,"number":2},"repository":{"id":1296269,"name":"hello","full_name":"octo-org/hello"},"organization":{"id":9,"login":"octo-org"},"installation":{"id":1001,"node_id":"x"},"sender":{"id":3}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, gotErr := decodeBody(body)
		want, wantErr := decodedObject(body)
		if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
			t.Fatalf("%q: decoded with error %v, reference %v", body, gotErr, wantErr)
		}
		if gotErr == nil {
			compareMembers(t, body, got, want, 0)
		}
	})
}

func compareMembers(t *testing.T, body []byte, got jsonObject, want object, depth int) {
	t.Helper()
	for _, k := range memberKeys {
		if got.present(k) != want.present(k) {
			t.Fatalf("%q: present(%q)", body, k)
		}
		if g, w := got.array(k), want.array(k); g != w {
			t.Fatalf("%q: array(%q) %v, reference %v", body, k, g, w)
		}
		gs, gok := got.str(k)
		ws, wok := want.str(k)
		if gs != ws || gok != wok {
			t.Fatalf("%q: str(%q) %q %v, reference %q %v", body, k, gs, gok, ws, wok)
		}
		gi, gok := got.id(k)
		wi, wok := idOf(want[k])
		if gi != wi || gok != wok {
			t.Fatalf("%q: id(%q) %q %v, reference %q %v", body, k, gi, gok, wi, wok)
		}
		ga, gb, gc := got.nestedID(k)
		wa, wb, wc := want.nestedID(k)
		if ga != wa || gb != wb || gc != wc {
			t.Fatalf("%q: nestedID(%q)", body, k)
		}
		gInner, gok := got.object(k)
		wInner, wok := want.object(k)
		if gok != wok {
			t.Fatalf("%q: object(%q) %v, reference %v", body, k, gok, wok)
		}
		if gok && depth < 3 {
			compareMembers(t, body, gInner, wInner, depth+1)
		}
	}
}
