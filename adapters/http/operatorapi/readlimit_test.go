package operatorapi_test

import (
	"errors"
	"testing"

	"github.com/hephaestus-dev/hephaestus/adapters/http/operatorapi"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// An account holds at most the limit; a release frees one (once, however often it is called);
// other accounts are counted apart.
func TestReadLimitPerAccount(t *testing.T) {
	l, err := operatorapi.NewReadLimit(2)
	if err != nil {
		t.Fatal(err)
	}
	bob, ana := ports.Principal{AccountID: 7}, ports.Principal{AccountID: 8}
	first, err := l.Acquire(bob)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(bob); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(bob); !errors.Is(err, ports.ErrTooManyRequests) {
		t.Fatalf("third read of one account: %v, want ErrTooManyRequests", err)
	}
	if _, err := l.Acquire(ana); err != nil {
		t.Fatalf("another account's read: %v", err)
	}
	first()
	first()
	if _, err := l.Acquire(bob); err != nil {
		t.Fatalf("after a release: %v", err)
	}
	if _, err := l.Acquire(bob); !errors.Is(err, ports.ErrTooManyRequests) {
		t.Fatalf("a second release of the same read freed another: %v", err)
	}
	if _, err := operatorapi.NewReadLimit(0); err == nil {
		t.Fatal("a limit of 0 reads was accepted")
	}
}
