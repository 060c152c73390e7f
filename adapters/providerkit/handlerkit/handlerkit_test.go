package handlerkit_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/handlerkit"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

type registrar struct{ events []string }

func (r *registrar) Register(_ provider.Provider, event string, _ ports.Handler) error {
	r.events = append(r.events, event)
	return nil
}

var toy = provider.MustNew("TOY")

func noop(context.Context, ports.Dispatch) error { return nil }

// Register wires every event in the given order, and refuses an event without a handler
// instead of registering nothing for it.
func TestRegister(t *testing.T) {
	reg := &registrar{}
	hs := map[string]ports.Handler{"b": ports.HandlerFunc(noop), "a": ports.HandlerFunc(noop)}
	if err := handlerkit.Register(reg, toy, []string{"b", "a"}, hs); err != nil {
		t.Fatal(err)
	}
	if strings.Join(reg.events, ",") != "b,a" {
		t.Fatalf("registered %v, want b,a", reg.events)
	}
	if err := handlerkit.Register(&registrar{}, toy, []string{"a", "c"}, hs); err == nil {
		t.Fatal("an event without a handler was accepted")
	}
}

// A payload that does not decode, or lacks a field, is a permanent parsing failure that names
// the provider and the event; Wrap keeps the failure's class in the chain.
func TestKitFailures(t *testing.T) {
	kit := handlerkit.Kit("toy")
	var v struct{ A int }
	var parsing *inbox.PayloadParsingError
	for _, err := range []error{kit.Decode("ping", []byte(`{"A":"x"}`), &v), kit.Malformed("ping", "needs %s", "an id")} {
		if !errors.As(kit.Wrap("ping", err), &parsing) || !strings.Contains(err.Error(), "toy ping payload") {
			t.Fatalf("not a parsing failure of toy ping: %v", err)
		}
	}
	if err := kit.Decode("ping", []byte(`{"A":1}`), &v); err != nil || v.A != 1 {
		t.Fatalf("a valid payload: %v %v", err, v)
	}
	if kit.Wrap("ping", nil) != nil {
		t.Fatal("Wrap of nil is not nil")
	}
	if _, err := kit.Workspace("ping", ports.Dispatch{}); err == nil {
		t.Fatal("a row without a workspace was accepted")
	}
	if err := handlerkit.Needs(toy, nil, struct{}{}); err == nil {
		t.Fatal("handlers without an inbox were accepted")
	}
}
