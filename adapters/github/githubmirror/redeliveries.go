package githubmirror

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubredelivery"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
)

// Redeliveries is the redelivery reconciler's store (migration 00014).
type Redeliveries struct{ pool *pgxpool.Pool }

var _ githubredelivery.RedeliveryStore = (*Redeliveries)(nil)

// NewRedeliveries builds the store.
func NewRedeliveries(pool *pgxpool.Pool) (*Redeliveries, error) {
	if pool == nil {
		return nil, errors.New("github redeliveries: nil pool")
	}
	return &Redeliveries{pool: pool}, nil
}

const (
	// unknownGUIDs keeps the guids stored in no inbox row and never requested. The delivery
	// index uq_provider_event_delivery leads with workspace_id, so the lookup goes workspace
	// by workspace (NULL for installation rows), one index descent per workspace and guid,
	// instead of an index of its own that every admission would have to write.
	// A guid already requested counts as unknown again only when another request is
	// allowed: fewer than $3 made, the last $4 microseconds · 2^(requests-1) ago.
	unknownGUIDs = `
		SELECT g FROM unnest($2::text[]) AS g
		WHERE NOT EXISTS (SELECT 1 FROM github_redelivery_request r WHERE r.guid = g
		                  AND (r.attempts >= $3
		                       OR r.requested_at > now() - $4::bigint * power(2, r.attempts - 1) * interval '1 microsecond'))
		  AND NOT EXISTS (SELECT 1 FROM provider_event e
		                  WHERE e.workspace_id IS NULL AND e.provider = $1 AND e.delivery_key = g)
		  AND NOT EXISTS (SELECT 1 FROM workspace w JOIN provider_event e
		                  ON e.workspace_id = w.id AND e.provider = $1 AND e.delivery_key = g)`
	// claimRedelivery records the first request, or one more when the record allows it; the
	// row lock of ON CONFLICT DO UPDATE makes two servers' claims of one request one.
	claimRedelivery = `
		INSERT INTO github_redelivery_request (guid, delivery_id) VALUES ($1, $2)
		ON CONFLICT (guid) DO UPDATE
		SET attempts = github_redelivery_request.attempts + 1, delivery_id = EXCLUDED.delivery_id, requested_at = now()
		WHERE github_redelivery_request.attempts < $3
		  AND github_redelivery_request.requested_at <= now() - $4::bigint * power(2, github_redelivery_request.attempts - 1) * interval '1 microsecond'`
	// releaseRedelivery takes back a request that failed: the record of a first request goes,
	// a later one counts one request less (its spacing then runs from this attempt).
	releaseRedelivery = `
		WITH first AS (DELETE FROM github_redelivery_request WHERE guid = $1 AND attempts = 1 RETURNING guid)
		UPDATE github_redelivery_request SET attempts = attempts - 1 WHERE guid = $1 AND attempts > 1`
	// forgetOldRedeliveries: GitHub lists and redelivers deliveries of the last days only.
	forgetOldRedeliveries = `DELETE FROM github_redelivery_request WHERE requested_at < now() - interval '7 days'`
)

// UnknownGUIDs implements githubredelivery.RedeliveryStore.
func (s *Redeliveries) UnknownGUIDs(ctx context.Context, provider string, guids []string, again githubredelivery.Again) ([]string, error) {
	if len(guids) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, unknownGUIDs, provider, guids, again.MaxRequests, again.After.Microseconds())
	if err != nil {
		return nil, sqlkit.Interpret("unknown guids", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			return nil, sqlkit.Interpret("unknown guids", err)
		}
		out = append(out, g)
	}
	return out, sqlkit.Interpret("unknown guids", rows.Err())
}

// ClaimRedelivery implements githubredelivery.RedeliveryStore. It also forgets records older than any
// delivery GitHub still lists.
func (s *Redeliveries) ClaimRedelivery(ctx context.Context, guid string, id int64, again githubredelivery.Again) (bool, error) {
	if _, err := s.pool.Exec(ctx, forgetOldRedeliveries); err != nil {
		return false, sqlkit.Interpret("forget old redeliveries", err)
	}
	tag, err := s.pool.Exec(ctx, claimRedelivery, guid, id, again.MaxRequests, again.After.Microseconds())
	if err != nil {
		return false, sqlkit.Interpret("claim redelivery", err)
	}
	return tag.RowsAffected() == 1, nil
}

// ReleaseRedelivery implements githubredelivery.RedeliveryStore.
func (s *Redeliveries) ReleaseRedelivery(ctx context.Context, guid string) error {
	_, err := s.pool.Exec(ctx, releaseRedelivery, guid)
	return sqlkit.Interpret("release redelivery", err)
}
