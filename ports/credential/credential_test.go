package credential_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hephaestus-dev/hephaestus/ports/credential"
)

// panics reports whether f panicked.
func panics(f func()) (did bool) {
	defer func() { did = recover() != nil }()
	f()
	return false
}

// This test binary links no connection store, so the first claim here is the process's one.
func TestOnlyTheFirstClaimantIssues(t *testing.T) {
	issuer := credential.ClaimIssuer()
	c := issuer.Issue(7, 42, []byte("s3cret"))
	if c.Secret() != "s3cret" || c.WorkspaceID() != 7 || c.ConnectionID() != 42 || c.InstallationID() != 0 || c.IsZero() {
		t.Fatalf("issued %#v: secret %q, workspace %d, connection %d, installation %d", c, c.Secret(), c.WorkspaceID(), c.ConnectionID(), c.InstallationID())
	}
	if i := issuer.IssueInstallation(7, 42, 99, "ghs_x"); i.InstallationID() != 99 || i.Secret() != "ghs_x" {
		t.Fatalf("installation credential: installation %d, secret %q", i.InstallationID(), i.Secret())
	}
	if !panics(func() { credential.ClaimIssuer() }) {
		t.Fatal("a second claim of the issuer did not panic")
	}
	if !panics(func() { credential.Issuer{}.Issue(7, 42, []byte("forged")) }) {
		t.Fatal("an Issuer that ClaimIssuer did not return issued a credential")
	}
	if !panics(func() { credential.Issuer{}.IssueInstallation(7, 42, 99, "forged") }) {
		t.Fatal("an Issuer that ClaimIssuer did not return issued an installation credential")
	}
}

func TestTheSecretNeverPrints(t *testing.T) {
	c := credential.SpecCredential(t, 7, 42, "s3cret")
	holder := struct{ Cred credential.Credential }{c}
	for _, format := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
		for _, v := range []any{c, holder, &holder} {
			if out := fmt.Sprintf(format, v); strings.Contains(out, "s3cret") || !strings.Contains(out, "credential of connection 42") {
				t.Errorf("%s of %T printed %q", format, v, out)
			}
		}
		// fmt cannot call the methods of an unexported field: it prints the fields themselves.
		hidden := struct{ cred credential.Credential }{c}
		if out := fmt.Sprintf(format, hidden); strings.Contains(out, "s3cret") {
			t.Errorf("%s of a struct with an unexported credential printed %q", format, out)
		}
	}
	if !(credential.Credential{}).IsZero() {
		t.Error("the zero credential is not zero")
	}
}
