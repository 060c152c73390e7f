package admissionstore

// Parameters shared by both routes queries: $1 provider, $2 resource types, $3 resource ids
// (pairwise), $4 recipients through any connection of the provider, $5 the source connections
// themselves receive (connection-wide); then the source: $6 the URL's connection id, or $6 kind
// and $7 routing key.
const (
	// sourceByID: a per-connection provider's source is the connection of the URL.
	sourceByID = `SELECT c.id FROM connection c WHERE c.provider = $1 AND c.id = $6`
	// sourceByKey: the connections whose routing key the signed body names (ix_connection_source).
	sourceByKey = `SELECT c.id FROM connection c WHERE c.provider = $1 AND c.source_key = $7 AND c.kind = $6`

	// routesTail is ProviderEventSubscriptions: the source connections and every connection
	// whose subscription matches a resource of the delivery (only the sources' subscriptions
	// unless $4), whatever their state, with the state and config_version of the statement's
	// snapshot.
	//
	// In the same statement, locked takes each candidate's scoped lifecycle lock: the
	// connection row FOR SHARE, in id order across workspaces. Shared mode lets concurrent
	// admissions of the same connection run side by side, while a suspension's or
	// reconfiguration's FOR UPDATE waits until this transaction's inbox insert commits, and
	// this lock waits for a suspension that already holds the row. The id order is the one
	// order every multi-connection locker uses, so lockers cannot deadlock each other. After a
	// wait, READ COMMITTED returns the row as its updater committed it (or no row when it was
	// deleted), so comparing locked with candidate tells admission that the route changed
	// while it waited. Reading and locking in one statement saves a round trip per delivery.
	routesTail = `),
recipient AS (
    SELECT s.connection_id AS id
    FROM connection_subscription s
    WHERE s.provider = $1
      AND (s.resource_type, s.resource_id) IN (SELECT * FROM unnest($2::text[], $3::text[]))
      AND ($4::boolean OR s.connection_id IN (SELECT id FROM source))
    UNION
    SELECT id FROM source WHERE $5::boolean
),
candidate AS MATERIALIZED (
    SELECT c.id, c.workspace_id, c.kind, c.state, c.config_version, c.source_server_url,
           c.id IN (SELECT id FROM source) AS is_source,
           c.id IN (SELECT id FROM recipient) AS is_recipient
    FROM connection c
    WHERE c.id IN (SELECT id FROM source UNION SELECT id FROM recipient) AND c.provider = $1
),
locked AS MATERIALIZED (
    SELECT c.id, c.state, c.config_version
    FROM connection c
    WHERE c.id = ANY (ARRAY(SELECT id FROM candidate))
    ORDER BY c.id
    FOR SHARE
)
SELECT k.id, k.workspace_id, k.kind, k.state, k.config_version, k.source_server_url,
       k.is_source, k.is_recipient,
       l.id IS NOT NULL, coalesce(l.state, ''), coalesce(l.config_version, 0)
FROM candidate k
LEFT JOIN locked l ON l.id = k.id
ORDER BY k.id`

	routesBySourceID  = `WITH source AS (` + sourceByID + routesTail
	routesBySourceKey = `WITH source AS (` + sourceByKey + routesTail

	// lockConnections takes the lifecycle locks of connections Routes did not lock, with the
	// same mode and order as routesTail and for the same reasons.
	lockConnections = `
SELECT id, state, config_version FROM connection
WHERE id = ANY ($1::bigint[])
ORDER BY id
FOR SHARE`

	// insertDeliveries stores one row per element, in the given order (the caller sorts by
	// workspace, so two admissions of one delivery meet the unique index in the same order).
	// ON CONFLICT infers uq_provider_event_delivery, whose NULLS NOT DISTINCT makes an
	// installation row (NULL workspace) deduplicate too: a retry or redelivery adds no row.
	// The claimers compare due_at with the database clock, so a server clock running ahead of
	// the database must not postpone a new row's first claim: it is due at the latest now().
	insertDeliveries = `
INSERT INTO provider_event (workspace_id, connection_id, provider, event_type, delivery_key,
                            scope_key, subject, payload, headers, due_at, received_at)
SELECT nullif(r.workspace_id, 0), nullif(r.connection_id, 0), r.provider, r.event_type, r.delivery_key,
       r.scope_key, r.subject, ($12::text[])[r.payload_index]::jsonb, r.headers::jsonb,
       least(r.due_at, now()), r.received_at
FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
            $8::text[], $9::timestamptz[], $10::timestamptz[], $11::int[])
     WITH ORDINALITY AS r(workspace_id, connection_id, provider, event_type, delivery_key, scope_key,
                          subject, headers, due_at, received_at, payload_index, ord)
ORDER BY r.ord
ON CONFLICT (workspace_id, provider, delivery_key) DO NOTHING
RETURNING coalesce(workspace_id, 0), provider, delivery_key`
)
