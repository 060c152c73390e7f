// Package envconfig reads settings from environment variables the way every part of the server
// does: a blank variable is unset, a secret is taken byte for byte, and every invalid value is
// collected as a Problem naming its variable, so one start reports all of them. bootstrap reads
// the process settings with it and each provider module its own (adapters/<p>/<p>module,
// config.go); the messages are the contract's wording and never show a secret's value.
package envconfig

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Problem is one invalid variable.
type Problem struct {
	Variable string
	Message  string // what is wrong with the value; never the value of a secret
}

func (p Problem) String() string { return p.Variable + ": " + p.Message }

// Error lists every invalid variable, so an operator fixes them all in one go.
type Error struct {
	Problems []Problem
}

// Error is one line per problem.
func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// ProblemsOf is the problems of err when it is an *Error, else nil.
func ProblemsOf(err error) []Problem {
	var e *Error
	if errors.As(err, &e) {
		return e.Problems
	}
	return nil
}

// Reader reads variables through getenv and collects the problems of their values.
type Reader struct {
	getenv   func(string) string
	problems []Problem
	invalid  map[string]bool // variables already reported: cross-checks skip them
}

// NewReader reads through getenv (os.Getenv in production, a map's lookup in specs).
func NewReader(getenv func(string) string) *Reader { return &Reader{getenv: getenv} }

// Fail records a problem of the variable name.
func (r *Reader) Fail(name, format string, args ...any) {
	r.problems = append(r.problems, Problem{Variable: name, Message: fmt.Sprintf(format, args...)})
	if r.invalid == nil {
		r.invalid = map[string]bool{}
	}
	r.invalid[name] = true
}

// Invalid reports whether name was already reported: a rule between two variables skips it,
// so one typo gives one line.
func (r *Reader) Invalid(name string) bool { return r.invalid[name] }

// Err is nil when nothing was invalid, else an *Error with every problem in the order found.
func (r *Reader) Err() error {
	if len(r.problems) == 0 {
		return nil
	}
	return &Error{Problems: append([]Problem(nil), r.problems...)}
}

// Merge adds the problems of err (an *Error, as another reader's Err returns); any other
// non-nil error is returned as it is.
func (r *Reader) Merge(err error) error {
	if err == nil {
		return nil
	}
	e, ok := err.(*Error)
	if !ok {
		return err
	}
	for _, p := range e.Problems {
		r.Fail(p.Variable, "%s", p.Message)
	}
	return nil
}

// Get returns the trimmed value and whether the variable is set to something non-blank.
func (r *Reader) Get(name string) (string, bool) {
	v := strings.TrimSpace(r.getenv(name))
	return v, v != ""
}

// Text is the trimmed value, or def when the variable is unset.
func (r *Reader) Text(name, def string) string {
	if v, ok := r.Get(name); ok {
		return v
	}
	return def
}

// Secret returns the value exactly as given: a secret's bytes are the provider's to choose,
// and trimming would silently change an HMAC key.
func (r *Reader) Secret(name string) string { return r.getenv(name) }

// HTTPURL reads an absolute http(s) URL without credentials (it is logged and used as a base).
func (r *Reader) HTTPURL(name, def string) string {
	v, ok := r.Get(name)
	if !ok {
		return def
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		r.Fail(name, "is not an absolute http(s) URL without credentials")
		return def
	}
	return v
}

// APIRoot is HTTPURL without a default, and without a query or fragment either: the value is
// the base every API path is appended to.
func (r *Reader) APIRoot(name string) string {
	v := r.HTTPURL(name, "")
	if v == "" || r.invalid[name] {
		return ""
	}
	if u, err := url.Parse(v); err != nil || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		r.Fail(name, "is not an absolute http(s) URL without credentials, query or fragment")
		return ""
	}
	return v
}

// WholeNumber reads an integer in [lo, hi]; hi 0 means no upper bound.
func (r *Reader) WholeNumber(name string, def, lo, hi int64) int64 {
	v, ok := r.Get(name)
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	switch {
	case (err != nil || n < lo) && hi == 0:
		r.Fail(name, "%q is not a whole number ≥ %d", v, lo)
		return def
	case hi != 0 && (err != nil || n < lo || n > hi):
		r.Fail(name, "%q is not a whole number between %d and %d", v, lo, hi)
		return def
	}
	return n
}

// OneOf reads one of the allowed words, in any case; the answer is spelled as allowed.
func (r *Reader) OneOf(name, def string, allowed ...string) string {
	v, ok := r.Get(name)
	if !ok {
		return def
	}
	for _, a := range allowed {
		if strings.EqualFold(v, a) {
			return a
		}
	}
	r.Fail(name, "%q is not one of %s", v, strings.Join(allowed, ", "))
	return def
}

// Duration reads Go syntax ("90s", "72h") or days ("3d", "1.5d"); it must be positive.
func (r *Reader) Duration(name string, def time.Duration) time.Duration {
	v, ok := r.Get(name)
	if !ok {
		return def
	}
	d, err := ParseDuration(v)
	if err != nil {
		r.Fail(name, "%q %v", v, err)
		return def
	}
	if d <= 0 {
		r.Fail(name, "%q is not a positive duration", v)
		return def
	}
	return d
}

// Pair reports the one of two variables that is set without the other (never its value).
func (r *Reader) Pair(name1, v1, name2, v2 string) {
	switch {
	case v1 != "" && v2 == "":
		r.Fail(name1, "is set without %s", name2)
	case v1 == "" && v2 != "":
		r.Fail(name2, "is set without %s", name1)
	}
}

// SecretFile reads the secret held by the file path names (variable name), refusing a file
// that others may read; "" after a recorded problem.
func (r *Reader) SecretFile(name, path string) string {
	if err := CheckSecretFileMode(path); err != nil {
		r.Fail(name, "%v", err)
		return ""
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		r.Fail(name, "cannot read %s: %v", path, errors.Unwrap(err))
		return ""
	}
	return string(raw)
}

// CheckSecretFileMode refuses a secret file that anyone but its owner may read or write.
func CheckSecretFileMode(path string) error {
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm()&0o077 == 0 {
		return nil // a missing file is generated; other errors surface when it is read
	}
	return fmt.Errorf("%s has mode %04o, readable or writable by others; it holds a secret: "+
		"check who read it, then `chmod 600 %s` (or delete it to generate a new one)", path, info.Mode().Perm(), path)
}

// ParseDuration accepts Go's syntax ("90s", "1h30m") and a day suffix ("3d", "1.5d").
func ParseDuration(s string) (time.Duration, error) {
	days, ok := strings.CutSuffix(s, "d")
	if !ok {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, errDurationSyntax
		}
		return d, nil
	}
	n, err := strconv.ParseFloat(days, 64)
	if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
		return 0, errDurationSyntax
	}
	// float64(MaxInt64) is 2^63; a product below it converts without overflow.
	ns := n * float64(24*time.Hour)
	if math.Abs(ns) >= float64(math.MaxInt64) {
		return 0, errDurationRange
	}
	return time.Duration(ns), nil
}

type durationError string

func (e durationError) Error() string { return string(e) }

const (
	errDurationSyntax = durationError("is not a duration (Go syntax like 90s or 1h30m, or days like 3d or 1.5d)")
	errDurationRange  = durationError("is too long for a duration")
)
