package admissionstore

// Why this file: the routes decide who receives a delivery, and the same statement takes the
// lifecycle locks that keep those routes true until the insert commits; reading and locking
// together is what lets a suspension that admission waited for be seen.

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Routes reads the source and recipient connections of spec and, in the same statement, takes
// every candidate's lifecycle lock in connection-id order (see routes). Each Route carries the
// state and config_version of the statement's snapshot, i.e. before any wait for a lock;
// LockConnections answers the values read under the lock.
func (t *admissionTx) Routes(ctx context.Context, spec ports.RouteSpec, provider string, sourceConnectionID int64) ([]ports.Route, error) {
	key := routeKey(spec, provider, sourceConnectionID)
	if t.conn == nil { // Admit's first run: remembered routes, or a connection
		if r, ok := t.memory.recall(key); ok && t.recalled == nil {
			t.recalled = &r
			t.held = make(map[int64]ports.LockedConnection, len(r.routes))
			for _, route := range r.routes {
				t.held[route.ConnectionID] = ports.LockedConnection{ConnectionID: route.ConnectionID, Exists: true,
					State: route.State, ConfigVersion: route.ConfigVersion}
			}
			return slices.Clone(r.routes), nil
		}
		if t.recalled != nil {
			return nil, errRecallMissed // asked twice: read them in a transaction of their own
		}
		if err := t.connect(ctx); err != nil {
			return nil, err
		}
	}
	types := make([]string, len(spec.Resources))
	ids := make([]string, len(spec.Resources))
	for i, r := range spec.Resources {
		types[i], ids[i] = r.Type, r.ID
	}
	args := []any{provider, types, ids, spec.RecipientsAnyConnection, spec.ConnectionWide}
	sd := t.stmt.routesByKey
	if sourceConnectionID > 0 {
		sd, args = t.stmt.routesByID, append(args, sourceConnectionID)
	} else {
		args = append(args, spec.SourceKind, spec.SourceKey)
	}
	var (
		routes    []ports.Route
		epoch     int64
		unchanged = true // no candidate changed while the statement waited for its lock
	)
	t.held = map[int64]ports.LockedConnection{}
	err := t.query(ctx, sd, args, func(rows pgx.Rows) error {
		var r ports.Route
		var state, lockedState string
		var lockedVersion int64
		var exists bool
		if err := rows.Scan(&r.ConnectionID, &r.WorkspaceID, &r.Kind, &state, &r.ConfigVersion,
			&r.SourceServerURL, &r.Source, &r.Recipient, &exists, &lockedState, &lockedVersion, &epoch); err != nil {
			return err
		}
		var err error
		if r.State, err = connection.ParseState(state); err != nil {
			return fmt.Errorf("connection %d: %w", r.ConnectionID, err)
		}
		locked := ports.LockedConnection{ConnectionID: r.ConnectionID, Exists: exists}
		if exists {
			locked.ConfigVersion = lockedVersion
			if locked.State, err = connection.ParseState(lockedState); err != nil {
				return fmt.Errorf("connection %d: %w", r.ConnectionID, err)
			}
		}
		unchanged = unchanged && exists && locked.State == r.State && locked.ConfigVersion == r.ConfigVersion
		t.held[r.ConnectionID] = locked
		routes = append(routes, r)
		return nil
	})
	if err != nil {
		return nil, sqlkit.Interpret("read routes", err)
	}
	if len(routes) > 0 {
		t.readEpoch = &epoch // the insert stores only while it holds (insertAndCommit)
	}
	if unchanged && len(routes) > 0 {
		// What the snapshot read is what the locks hold, as of the epoch of the same snapshot.
		t.memory.remember(key, remembered{routes: slices.Clone(routes), epoch: epoch})
	} else {
		t.memory.forget(key)
	}
	return routes, nil
}

// LockConnections answers from the locks Routes took when it holds all of ids; otherwise it
// takes them with lockConnections (ids in any order: the statement sorts them).
func (t *admissionTx) LockConnections(ctx context.Context, ids []int64) ([]ports.LockedConnection, error) {
	out := make([]ports.LockedConnection, 0, len(ids))
	for _, id := range ids {
		l, ok := t.held[id]
		if !ok {
			if t.recalled != nil {
				return nil, errRecallMissed // remembered routes lack it: read them
			}
			if err := t.connect(ctx); err != nil {
				return nil, err
			}
			return t.lock(ctx, ids)
		}
		out = append(out, l)
	}
	return out, nil
}

func (t *admissionTx) lock(ctx context.Context, ids []int64) ([]ports.LockedConnection, error) {
	found := map[int64]ports.LockedConnection{}
	err := t.query(ctx, t.stmt.lock, []any{ids}, func(rows pgx.Rows) error {
		l := ports.LockedConnection{Exists: true}
		var state string
		if err := rows.Scan(&l.ConnectionID, &state, &l.ConfigVersion); err != nil {
			return err
		}
		var err error
		if l.State, err = connection.ParseState(state); err != nil {
			return fmt.Errorf("connection %d: %w", l.ConnectionID, err)
		}
		found[l.ConnectionID] = l
		return nil
	})
	if err != nil {
		return nil, sqlkit.Interpret("lock connections", err)
	}
	out := make([]ports.LockedConnection, len(ids))
	for i, id := range ids {
		l, ok := found[id]
		if !ok {
			l = ports.LockedConnection{ConnectionID: id} // deleted: Exists false
		}
		out[i] = l
	}
	return out, nil
}
