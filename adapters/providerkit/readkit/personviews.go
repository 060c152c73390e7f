package readkit

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// PersonViewsOf reflects the view types (values or pointers of struct types, walked into their
// nested structs, pointers and slices) and collects the JSON member names of the fields tagged
// with PersonTag, each once. Errors: a tag value other than id, login, email, name or -, a
// tagged field without a JSON name, or a value that is not a struct.
func PersonViewsOf(views ...any) (contract.PersonViews, error) {
	var out contract.PersonViews
	seen := map[string]bool{}
	add := func(list *[]string, kind, name string) {
		if !seen[kind+"/"+name] {
			seen[kind+"/"+name] = true
			*list = append(*list, name)
		}
	}
	visited := map[reflect.Type]bool{}
	var walk func(t reflect.Type) error
	walk = func(t reflect.Type) error {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || visited[t] {
			return nil
		}
		visited[t] = true
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if err := walk(f.Type); err != nil {
				return err
			}
			kind, tagged := f.Tag.Lookup(contract.PersonTag)
			if !tagged || kind == "-" {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				return fmt.Errorf("person views: %s.%s is tagged %q but has no JSON name", t.Name(), f.Name, kind)
			}
			switch kind {
			case "id":
				add(&out.IDs, kind, name)
			case "login":
				add(&out.Logins, kind, name)
			case "email":
				add(&out.Emails, kind, name)
			case "name":
				add(&out.Names, kind, name)
			default:
				return fmt.Errorf("person views: %s.%s has the unknown person tag %q", t.Name(), f.Name, kind)
			}
		}
		return nil
	}
	for _, v := range views {
		t := reflect.TypeOf(v)
		if t == nil {
			return contract.PersonViews{}, fmt.Errorf("person views: a nil view")
		}
		base := t
		for base.Kind() == reflect.Pointer {
			base = base.Elem()
		}
		if base.Kind() != reflect.Struct {
			return contract.PersonViews{}, fmt.Errorf("person views: %s is not a struct", t)
		}
		if err := walk(t); err != nil {
			return contract.PersonViews{}, err
		}
	}
	return out, nil
}
