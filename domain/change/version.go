package change

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Versions. Each change's data carries "version": the version of the entity the change
// describes, as the mirror orders that entity's writes (the version rule that lets newer data
// win). A version is a string whose byte order is the mirror's order: of two changes of the
// same entity, the one with the greater version holds the newer state, and equal versions hold
// the same version of the entity. A consumer that keeps, per entity, the data with the greatest
// version (the later one in the feed when equal) ends with the mirror's state whatever order
// overlapping writers committed in. The adapters build versions in SQL from the stored row
// after the write (adapters/postgres/sqlkit.MirrorVersion), never from the incoming data.

// VersionKey is the member of a change's data that holds its version.
const VersionKey = "version"

// WithVersion returns c with version as its data's "version" member. Errors: ErrInvalidChange
// for an empty version or data that already has one.
func (c Change) WithVersion(version string) (Change, error) {
	if version == "" || strings.ContainsAny(version, "\"\\") {
		return Change{}, fmt.Errorf("%w: a version is a non-empty plain string", ErrInvalidChange)
	}
	// Only data that mentions the key is parsed (a publication per mirror write stays cheap).
	if bytes.Contains(c.data, []byte(`"`+VersionKey+`"`)) {
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(c.data, &probe); err != nil {
			return Change{}, fmt.Errorf("%w: data: %v", ErrInvalidChange, err)
		}
		if _, ok := probe[VersionKey]; ok {
			return Change{}, fmt.Errorf("%w: data already has a version", ErrInvalidChange)
		}
	}
	var b bytes.Buffer
	b.Grow(len(c.data) + len(version) + 16)
	b.WriteString(`{"` + VersionKey + `":"` + version + `"`)
	if rest := bytes.TrimSpace(c.data[1:]); len(rest) > 0 && rest[0] != '}' {
		b.WriteByte(',')
	}
	b.Write(c.data[1:])
	c.data = b.Bytes()
	return c, nil
}

// NewVersioned is New with the entity's version in its data (WithVersion).
func NewVersioned(t Type, subject, version string, data any) (Change, error) {
	c, err := New(t, subject, data)
	if err != nil {
		return Change{}, err
	}
	return c.WithVersion(version)
}
