package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// decoded decodes body as the reference reader: json.Valid, then a decoder with UseNumber into
// a map, with ParseObject's errors.
func decoded(body []byte) (map[string]any, error) {
	if !json.Valid(body) {
		return nil, ErrNotJSON
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, ErrNotObject
	}
	return m, nil
}

// FuzzMembers: ParseObject accepts and refuses what encoding/json does, and every accessor of
// Object answers what the same read of the decoded map answers, for every member name the map
// holds and for names it does not, at every nesting level the accessors reach.
func FuzzMembers(f *testing.F) {
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
		got, gotErr := ParseObject(body)
		want, wantErr := decoded(body)
		if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && !errors.Is(gotErr, wantErr)) {
			t.Fatalf("%q: parsed with error %v, reference %v", body, gotErr, wantErr)
		}
		if gotErr == nil {
			compareMembers(t, body, got, want, 0)
		}
	})
}

func compareMembers(t *testing.T, body []byte, got Object, want map[string]any, depth int) {
	t.Helper()
	keys := []string{"", "id", "absent"}
	for k := range want {
		keys = append(keys, k)
	}
	for _, k := range keys {
		v, found := want[k]
		if g, w := got.Present(k), found && v != nil; g != w {
			t.Fatalf("%q: Present(%q) %v, reference %v", body, k, g, w)
		}
		if _, gotFound := got.Get(k); gotFound != found {
			t.Fatalf("%q: Get(%q) found %v, reference %v", body, k, gotFound, found)
		}
		_, isArray := v.([]any)
		if g := got.Array(k); g != isArray {
			t.Fatalf("%q: Array(%q) %v, reference %v", body, k, g, isArray)
		}
		gs, gok := got.String(k)
		ws, wok := v.(string)
		if gs != ws || gok != wok {
			t.Fatalf("%q: String(%q) %q %v, reference %q %v", body, k, gs, gok, ws, wok)
		}
		gn, gok := got.Number(k)
		wn, wok := v.(json.Number)
		if gn != wn || gok != wok {
			t.Fatalf("%q: Number(%q) %q %v, reference %q %v", body, k, gn, gok, wn, wok)
		}
		gInner, gok := got.Object(k)
		wInner, wok := v.(map[string]any)
		if gok != wok {
			t.Fatalf("%q: Object(%q) %v, reference %v", body, k, gok, wok)
		}
		if gok && depth < 3 {
			compareMembers(t, body, gInner, wInner, depth+1)
		}
	}
}

// FuzzWithout: Without answers a valid JSON object that decodes to the object's decoded members
// less the removed names, and says whether one was there, however the names are escaped,
// repeated or spaced.
func FuzzWithout(f *testing.F) {
	for _, s := range []string{`{}`, `{"token":"x"}`, `{"token":"x","token":"y"}`, ` { "a" : 1 , "token" : "x" } `,
		`{"t\u006fken":"x","b":[1,{"token":2}]}`, `{"a":"token","b":{"token":"x"}}`, `{"token":null,"a":"\"}"}`,
		`{"type":"event_callback","token":"XXYYZZ","team_id":"T1","event":{"type":"message","text":"a\\nb"},"event_id":"Ev1"}`,
		"{\"a\":\"\xff\",\"token\":1}",
	} {
		f.Add([]byte(s), "token")
	}
	f.Fuzz(func(t *testing.T, body []byte, name string) {
		o, err := ParseObject(body)
		if err != nil {
			return
		}
		want, err := decoded(body)
		if err != nil {
			t.Fatalf("%q: parsed, reference refused it: %v", body, err)
		}
		_, had := want[name]
		delete(want, name)
		out, removed := o.Without(name)
		if removed != had {
			t.Fatalf("%q: Without(%q) removed %v, reference holds it %v", body, name, removed, had)
		}
		got, err := decoded(out)
		if err != nil {
			t.Fatalf("%q: Without(%q) answered %q, not an object: %v", body, name, out, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: Without(%q) answered %q, decoded %v, reference %v", body, name, out, got, want)
		}
	})
}
