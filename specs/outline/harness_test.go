package outline_test

import (
	"context"
	"errors"
	"sync"

	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemodel"
	"github.com/hephaestus-dev/hephaestus/ports"
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
