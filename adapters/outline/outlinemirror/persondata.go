package outlinemirror

import (
	"context"
	"fmt"

	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/pgutil"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ ports.PersonDataStore = (*Store)(nil)

// outlinePersonData is the Outline mirror's personal-data map. Documents and collections are
// shared items and the mirror keeps no author of them; the event record names who acted, a
// reference that erasure removes (NULL) while the record, its time and model stay.
// Parameters: @workspaces (bigint[]), @ids the person's Outline user ids (text[], exact).
var outlinePersonData = []pgutil.PersonRule{
	{Table: "outline_event", Where: `actor_id = ANY(@ids)`, Set: `actor_id = NULL`},
}

// Provider implements ports.PersonDataStore.
func (s *Store) Provider() provider.Provider { return outline.Provider }

// CountPerson implements ports.PersonDataStore.
func (s *Store) CountPerson(ctx context.Context, tx ports.Tx, workspaces []int64, scope erasure.Scope) (int64, error) {
	ptx, err := deliveryinbox.PgxTx(tx)
	if err != nil {
		return 0, err
	}
	return pgutil.CountPerson(ctx, ptx, outlinePersonData, pgutil.PersonIDArgs(workspaces, scope))
}

// ErasePerson implements ports.PersonDataStore.
func (s *Store) ErasePerson(ctx context.Context, tx ports.Tx, workspaces []int64, scope erasure.Scope) (int64, error) {
	ptx, err := deliveryinbox.PgxTx(tx)
	if err != nil {
		return 0, err
	}
	n, err := pgutil.ErasePerson(ctx, ptx, outlinePersonData, pgutil.PersonIDArgs(workspaces, scope))
	if err != nil {
		return 0, fmt.Errorf("erase outline person data: %w", err)
	}
	return n, nil
}
