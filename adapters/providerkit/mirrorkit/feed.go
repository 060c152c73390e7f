// Package mirrorkit is what every provider's PostgreSQL mirror store (adapters/<provider>/
// <provider>mirror) is built from, so that a provider's mirror keeps only its SQL and its row
// types:
//
//   - Feed, the store's change-feed publisher with the read API's shaping: wiring
//     (PublishChanges), publication of a versioned change, teardown's removal of torn-down
//     changes and connection.torn_down;
//   - Write, a versioned "reporting upsert, then publish a change": the upsert reports whether
//     the version rule let it write and whether it changed the row in anything but the event
//     id (Reporting), and only then is the change published, in the write's transaction
//     (WriteIndependent sends the writes of distinct rows, a push's commits, in one round trip);
//   - Exec and Batch, statements in the step's transaction (sqlkit.PgxTx);
//   - PersonData, a provider's personal-data map as contract.PersonDataStore counts and erases it;
//   - Teardown, the batch of deletes of an uninstalled connection.
//
// Every write runs in the transaction the delivery inbox (or a sync page, or an erasure pass)
// lent the store as a ports.Tx; the kit never commits.
package mirrorkit

import (
	"context"
	"errors"

	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Feed is a mirror store's change publisher with the read API's shaping V (the provider's
// Views interface). The zero Feed publishes nothing: a store without a feed writes without
// reporting.
type Feed[V any] struct {
	pub     ports.ChangePublisher
	remover ports.ChangeRemover
	views   V
}

// Set makes the feed publish through pub, shaped by views; name is the provider's in errors.
// Call it once, before the store is used. Errors: a nil pub or views, a pub that cannot remove
// changes (ports.ChangeRemover).
func (f *Feed[V]) Set(name string, pub ports.ChangePublisher, views V) error {
	if pub == nil || any(views) == nil {
		return errors.New(name + " mirror: a publisher and the read API's views are required")
	}
	remover, ok := pub.(ports.ChangeRemover)
	if !ok {
		return errors.New(name + " mirror: the publisher must also remove torn-down and erased changes (ports.ChangeRemover)")
	}
	*f = Feed[V]{pub: pub, remover: remover, views: views}
	return nil
}

// On reports whether the feed publishes.
func (f Feed[V]) On() bool { return f.pub != nil }

// Views is the read API's shaping; call it only when On.
func (f Feed[V]) Views() V { return f.views }

// Publish publishes, in tx, a change of the entity subject whose stored version is version
// (domain/change "Versions"), with data.
func (f Feed[V]) Publish(ctx context.Context, tx ports.Tx, ws int64, t change.Type, subject, version string, data any) error {
	c, err := change.NewVersioned(t, subject, version, data)
	if err != nil {
		return err
	}
	return f.pub.Publish(ctx, tx, ws, c)
}

// PublishUnversioned publishes, in tx, a change of an entity without a version.
func (f Feed[V]) PublishUnversioned(ctx context.Context, tx ports.Tx, ws int64, t change.Type, subject string, data any) error {
	c, err := change.New(t, subject, data)
	if err != nil {
		return err
	}
	return f.pub.Publish(ctx, tx, ws, c)
}

// Remove replaces, in tx, the data of the changes sel selects (their rows were erased), and
// returns how many.
func (f Feed[V]) Remove(ctx context.Context, tx ports.Tx, ws int64, sel ports.ChangeSelection) (int64, error) {
	return f.remover.RemoveChanges(ctx, tx, ws, sel)
}

// Teardown removes, in the teardown's transaction, the data of the torn-down changes sel
// selects and publishes connection.torn_down with what went (everything: every row of the
// provider in the workspace) and the number of changes whose data it removed. Nothing without
// a publisher.
func (f Feed[V]) Teardown(ctx context.Context, tx ports.Tx, p provider.Provider, ws, conn int64, sel ports.ChangeSelection,
	resources []change.TornDownResource, everything bool) error {
	if f.pub == nil {
		return nil
	}
	n, err := f.remover.RemoveChanges(ctx, tx, ws, sel)
	if err != nil {
		return err
	}
	c, err := change.NewTornDown(change.TornDown{ConnectionID: conn, Provider: p.String(), Resources: resources,
		Everything: everything, RemovedChanges: n})
	if err != nil {
		return err
	}
	return f.pub.Publish(ctx, tx, ws, c)
}
