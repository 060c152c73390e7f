// Package toy is a fixture of the godoc rule: some exported identifiers have no doc comment.
package toy

// Documented has its comment.
type Documented struct{ s string }

type Bare struct{}

// String is documented.
func (d Documented) String() string { return d.s }

func (d Documented) IsZero() bool { return d.s == "" }

// The group's comment documents its members.
var (
	First  = Documented{"first"}
	Second = Documented{"second"}
)

const Loose = 1

func Exported() {}

type hidden struct{}

func (hidden) Exported() {}
