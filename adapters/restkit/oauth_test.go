package restkit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hephaestus-dev/hephaestus/adapters/restkit"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// An OAuth refusal keeps the provider's error code only when it looks like one: anything else
// (an echoed code or token, markup) is "unrecognised", and no refusal is a retry.
func TestOAuthRefusedKeepsOnlyACode(t *testing.T) {
	o := restkit.OAuth{Provider: "slack"}
	for code, want := range map[string]string{
		"invalid_code":             "slack: oauth.v2.access refused (invalid_code)",
		"xoxb-1234-secret":         "slack: oauth.v2.access refused (unrecognised)",
		"bad_verification_code\n!": "slack: oauth.v2.access refused (unrecognised)",
		"":                         "slack: oauth.v2.access refused (unrecognised)",
	} {
		err := o.Refused("oauth.v2.access", code)
		if !strings.HasPrefix(err.Error(), want) || !errors.Is(err, ports.ErrUnauthenticated) {
			t.Errorf("Refused(%q) = %v, want %q… wrapping ports.ErrUnauthenticated", code, err, want)
		}
	}
	if err := o.Unavailable("read answer"); !errors.Is(err, ports.ErrUnavailable) {
		t.Errorf("Unavailable = %v, want ports.ErrUnavailable", err)
	}
}

// NewOAuth refuses a client without its id or secret and a root that is not http(s), and never
// echoes the secret.
func TestNewOAuthChecksItsConfiguration(t *testing.T) {
	for _, c := range []struct {
		id, secret, root, want string
	}{
		{"", "s3cret", "https://slack.com/api/", "client id and client secret are required"},
		{"id", "", "https://slack.com/api/", "client id and client secret are required"},
		{"id", "s3cret", "slack.com/api/", "is not an http(s) URL"},
		{"id", "s3cret", "ftp://slack.com/", "is not an http(s) URL"},
	} {
		_, err := restkit.NewOAuth("slack", c.id, c.secret, nil, 1<<10, c.root)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("NewOAuth(%q, %q, %q) = %v, want %q", c.id, c.secret, c.root, err, c.want)
		}
	}
	o, err := restkit.NewOAuth("slack", "id", "s3cret", nil, 1<<10, "https://slack.com/api/")
	if err != nil || o.HTTP == nil {
		t.Fatalf("NewOAuth = %+v, %v; want a client with a default HTTP client", o, err)
	}
}
