package outline_test

import (
	"context"
	"errors"
	"sync"

	. "github.com/onsi/ginkgo/v2"

	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemodel"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

var errInjected = errors.New("injected mirror failure")

// faultyStore is the real Outline store counting document writes, with an event-record failure
// injected once after the real write.
type faultyStore struct {
	outlinemodel.Store
	mu             sync.Mutex
	failRecord     error
	documentWrites int
}

func (f *faultyStore) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failRecord, f.documentWrites = nil, 0
}

func (f *faultyStore) failNextRecord(err error) { f.mu.Lock(); f.failRecord = err; f.mu.Unlock() }

func (f *faultyStore) writes() int { f.mu.Lock(); defer f.mu.Unlock(); return f.documentWrites }

func (f *faultyStore) UpsertDocument(ctx context.Context, tx ports.Tx, ws int64, d outlinemodel.Document) error {
	f.mu.Lock()
	f.documentWrites++
	f.mu.Unlock()
	return f.Store.UpsertDocument(ctx, tx, ws, d)
}

func (f *faultyStore) RecordEvent(ctx context.Context, tx ports.Tx, ws int64, e outlinemodel.Event) error {
	f.mu.Lock()
	fail := f.failRecord
	f.failRecord = nil
	f.mu.Unlock()
	if err := f.Store.RecordEvent(ctx, tx, ws, e); err != nil {
		return err
	}
	return fail
}

func newWorkspace(ctx context.Context, slug string) int64 {
	GinkgoHelper()
	return support.NewWorkspace(ctx, svc, slug).ID
}

// newAccount creates an account; role ("ADMIN", "MEMBER" or "") makes it a member of slug.
func newAccount(ctx context.Context, login, slug, role string) string {
	GinkgoHelper()
	return support.NewAccount(ctx, svc, login, false, slug, role).Token
}

// delivery is one Outline row of a workspace, LEASED under epoch 1 as a claim leaves it, in a
// scope of its own so a spec can hold several at once.
type delivery struct{ support.Delivery }

var outline = provider.MustNew("OUTLINE")

func leased(ctx context.Context, ws int64, eventType, subject, payload string) delivery {
	GinkgoHelper()
	return delivery{support.LeasedEvent(ctx, pool, ws, outline, eventType, subject, payload)}
}

// attempt runs the row's handler as the consumer does under the row's current lease epoch.
func (d delivery) attempt(ctx context.Context) error {
	GinkgoHelper()
	return d.Handle(ctx, registry)
}

// releaseForRetry gives the row the next claim's lease epoch, which fences the retry's writes.
func (d delivery) releaseForRetry(ctx context.Context) {
	GinkgoHelper()
	d.NextLease(ctx)
}

func (d delivery) steps(ctx context.Context) []string {
	GinkgoHelper()
	return d.Steps(ctx)
}

func column(ctx context.Context, sql string, args ...any) []string {
	GinkgoHelper()
	return support.Column(ctx, pool, sql, args...)
}

// get sends GET path to the read API with token as the bearer ("" for none).
func get(path, token string) support.Response {
	GinkgoHelper()
	return support.GetJSON(client, server.URL+path, token)
}
