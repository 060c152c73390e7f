package admissionstore

import (
	"fmt"
	"strings"
)

// Parameters of both routes statements: $1 provider, $2 resource types, $3 resource ids
// (pairwise), $4 recipients through any connection of the provider, $5 the source connections
// themselves receive (connection-wide); then the source: $6 the URL's connection id, or $6 kind
// and $7 routing key.
var (
	routesBySourceID  = strings.NewReplacer("IS_SOURCE", isSourceByID, "OTHER_TENANT_KIND", otherKindByID).Replace(routes)
	routesBySourceKey = strings.NewReplacer("IS_SOURCE", isSourceByKey, "OTHER_TENANT_KIND", otherKindByKey).Replace(routes)

	// The inserts with their epoch guard, by the parameters that hold its epoch and mismatch.
	insertDeliveriesSQL = strings.Replace(insertDeliveries, "EPOCH_GUARD", withGuardParams("$13", "$14"), 1)
	insertDeliverySQL   = strings.Replace(insertDelivery, "EPOCH_GUARD", withGuardParams("$13", "$14"), 1)

	// insertGroups[n] is the group transaction's insert of n rows (see insertGroupSQL).
	insertGroups = func() []string {
		out := make([]string, maxGroupRows+1)
		for n := 1; n <= maxGroupRows; n++ {
			out[n] = buildInsertGroup(n)
		}
		return out
	}()
)

// groupRowParams is how many parameters each row of a group insert takes: insertDelivery's
// first 13 (the traceparent and the epoch last), its epoch guard's mismatch flag being false
// for every row.
const groupRowParams = 13

// insertGroupSQL is the insert of a group transaction's n rows (1 ≤ n ≤ maxGroupRows).
func insertGroupSQL(n int) string { return insertGroups[n] }

// groupStatementName is the prepared name of insertGroupSQL(n).
func groupStatementName(n int) string { return fmt.Sprintf("hx_admission_insert_group_%d", n) }

// buildInsertGroup writes insertGroup for n rows: row i's parameters are insertDelivery's $1
// … $13 shifted by 13·i, in text format (rowParams).
func buildInsertGroup(n int) string {
	var rows strings.Builder
	for i := range n {
		if i > 0 {
			rows.WriteString(",\n       ")
		}
		p := func(j int) int { return i*groupRowParams + j }
		fmt.Fprintf(&rows, "(%d, $%d::bigint, $%d::bigint, $%d::text, $%d::text, $%d::text, $%d::text, $%d::text, "+
			"$%d::jsonb, $%d::jsonb, $%d::timestamptz, $%d::timestamptz, $%d::text, $%d::bigint)",
			i+1, p(1), p(2), p(3), p(4), p(5), p(6), p(7), p(8), p(9), p(10), p(11), p(12), p(13))
	}
	return strings.NewReplacer("ROWS", rows.String(), "EPOCH_GUARD", withGuardParams("v.epoch", "false")).Replace(insertGroup)
}

// withGuardParams is epochGuard reading its epoch from parameter epoch and its mismatch flag
// from parameter fail.
func withGuardParams(epoch, fail string) string {
	return strings.NewReplacer("EPOCH", epoch, "FAIL", fail).Replace(epochGuard)
}

const (
	// isSourceByID: a per-connection provider's source is the connection of the URL.
	isSourceByID = `c.id = $6`
	// isSourceByKey: the connections whose routing key the signed body names (ix_connection_source).
	isSourceByKey = `(c.source_key = $7 AND c.kind = $6)`

	// otherKindByKey and otherKindByID say which connections may receive through another
	// connection's source ($4, tenant isolation): never one of the source's own kind. A
	// connection of the source kind with another routing key is another tenant's source (a
	// GitHub App connection of another installation): it receives only its own installation's
	// deliveries, whatever it subscribes to. GitHub PAT connections receive through the App
	// source, and only through subscriptions whose access the provider verified (sub).
	// A per-connection provider's deliveries go to that connection's subscriptions alone.
	otherKindByKey = `c.kind <> $6`
	otherKindByID  = `false`

	// routes, with IS_SOURCE and OTHER_TENANT_KIND replaced by the predicates above, is
	// ProviderEventSubscriptions: the source connections and every connection whose VERIFIED
	// subscription matches a resource of the delivery (only the sources' subscriptions unless
	// $4, and then only connections of another kind than the source's), whatever their state,
	// with the state and config_version of the statement's snapshot (candidate k). A
	// subscription whose access is UNVERIFIED or REVOKED routes nothing: the decision reads
	// only database state, never the provider.
	//
	// In the same statement, l takes each candidate's scoped lifecycle lock: the connection
	// row FOR SHARE, one row after the other in the order of k, which is connection-id order
	// across workspaces (k is sorted, and the lateral join locks per row of k in that order).
	// Shared mode lets concurrent admissions of the same connection run side by side, while a
	// suspension's or reconfiguration's FOR UPDATE waits until this transaction's inbox insert
	// commits, and this lock waits for a suspension that already holds the row. The id order is
	// the one order every multi-connection locker uses, so lockers cannot deadlock each other.
	// After a wait, READ COMMITTED returns the row as its updater committed it (or no row when
	// it was deleted), so comparing l with k tells admission that the route changed while it
	// waited. Reading and locking in one statement saves a round trip per delivery.
	//
	// The statement is shaped for admission's hot path. The matching subscriptions are read
	// once into an array (ix_connection_subscription_route), the candidates come from one
	// bitmap scan of connection (routing key or id, then the array), and the plan stays about a
	// dozen nodes: executor start-up of a larger plan costs more than the lookups themselves.
	// OFFSET 0 keeps the subqueries as written: sub is evaluated once, and k keeps its ORDER BY
	// beneath the lateral join, so the locks follow it. The transaction runs it on its generic
	// plan (the admission pool forces generic plans, see Configure), so a delivery does not plan it again.
	//
	// The last column is the route epoch of the statement's snapshot (migration 00007): the
	// routes are remembered with it.
	routes = `
SELECT k.id, k.workspace_id, k.kind, k.state, k.config_version, k.source_server_url,
       k.is_source, k.is_recipient,
       l.state IS NOT NULL, coalesce(l.state, ''), coalesce(l.config_version, 0),
       coalesce((SELECT e.epoch FROM route_epoch e), 0)
FROM (
    SELECT c.id, c.workspace_id, c.kind, c.state, c.config_version, c.source_server_url,
           IS_SOURCE AS is_source,
           (c.id = ANY (sub.ids) AND (($4::boolean AND OTHER_TENANT_KIND) OR IS_SOURCE))
               OR ($5::boolean AND IS_SOURCE) AS is_recipient
    FROM (SELECT ARRAY(
              SELECT s.connection_id
              FROM unnest($2::text[], $3::text[]) AS r(resource_type, resource_id)
              JOIN connection_subscription s
                ON s.provider = $1 AND s.resource_type = r.resource_type AND s.resource_id = r.resource_id
               AND s.access = 'VERIFIED'
          ) AS ids
          OFFSET 0) AS sub,
         connection c
    WHERE c.provider = $1 AND (IS_SOURCE OR ($4::boolean AND OTHER_TENANT_KIND AND c.id = ANY (sub.ids)))
    ORDER BY c.id
    OFFSET 0) AS k
LEFT JOIN LATERAL (
    SELECT x.state, x.config_version FROM connection x WHERE x.id = k.id FOR SHARE
) AS l ON true
ORDER BY k.id`

	// lockConnections takes the lifecycle locks of connections Routes did not lock, with the
	// same mode and order as the routes statement and for the same reasons.
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
	// EPOCH_GUARD is epochGuard on $13 and $14. $15 is the traceparent of the request, the
	// same for every row of the delivery (NULL when not traced).
	insertDeliveries = `
INSERT INTO provider_event (workspace_id, connection_id, provider, event_type, delivery_key,
                            scope_key, subject, payload, headers, due_at, received_at, trace_parent)
SELECT nullif(r.workspace_id, 0), nullif(r.connection_id, 0), r.provider, r.event_type, r.delivery_key,
       r.scope_key, r.subject, ($12::text[])[r.payload_index]::jsonb, r.headers::jsonb,
       least(r.due_at, now()), r.received_at, $15::text
FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
            $8::text[], $9::timestamptz[], $10::timestamptz[], $11::int[])
     WITH ORDINALITY AS r(workspace_id, connection_id, provider, event_type, delivery_key, scope_key,
                          subject, headers, due_at, received_at, payload_index, ord)
WHERE EPOCH_GUARD
ORDER BY r.ord
ON CONFLICT (workspace_id, provider, delivery_key) DO NOTHING
RETURNING coalesce(workspace_id, 0), provider, delivery_key`

	// insertDelivery is insertDeliveries for the common single row, with the same columns,
	// conflict target, due time and epoch guard (on $13 and $14; $12 is the traceparent): one
	// row plans, starts and encodes for less than arrays, and its command tag (INSERT 0 1 or
	// INSERT 0 0) says whether it was stored.
	insertDelivery = `
INSERT INTO provider_event (workspace_id, connection_id, provider, event_type, delivery_key,
                            scope_key, subject, payload, headers, due_at, received_at, trace_parent)
SELECT nullif($1::bigint, 0), nullif($2::bigint, 0), $3, $4, $5, $6, $7, $8::jsonb, $9::jsonb,
       least($10::timestamptz, now()), $11, $12::text
WHERE EPOCH_GUARD
ON CONFLICT (workspace_id, provider, delivery_key) DO NOTHING`

	// insertGroup is insertDelivery for the rows of several deliveries on remembered routes
	// (ROWS, one VALUES row each, see buildInsertGroup), with the same columns, conflict target
	// and due time. Each row carries its own delivery's remembered route epoch, and the guard
	// stores a row only while that epoch is current (a mismatch stores nothing; the delivery
	// then reads its routes). The rows come sorted by the unique index's key and are inserted
	// in that order (ORDER BY v.ord), so the first of two rows with one key is the one stored.
	// RETURNING names the stored rows.
	insertGroup = `
INSERT INTO provider_event (workspace_id, connection_id, provider, event_type, delivery_key,
                            scope_key, subject, payload, headers, due_at, received_at, trace_parent)
SELECT nullif(v.workspace_id, 0), nullif(v.connection_id, 0), v.provider, v.event_type, v.delivery_key,
       v.scope_key, v.subject, v.payload, v.headers, least(v.due_at, now()), v.received_at, v.trace_parent
FROM (VALUES ROWS)
     AS v(ord, workspace_id, connection_id, provider, event_type, delivery_key, scope_key, subject,
          payload, headers, due_at, received_at, trace_parent, epoch)
WHERE EPOCH_GUARD
ORDER BY v.ord
ON CONFLICT (workspace_id, provider, delivery_key) DO NOTHING
RETURNING coalesce(workspace_id, 0), provider, delivery_key`

	// epochGuard is the inserts' epoch guard, on the parameters EPOCH, the epoch the routes were
	// read at, and FAIL, what a mismatch does. The insert admits only when its snapshot still
	// has that epoch: no connection or subscription change committed since the routes were
	// read, so the routes statement would answer the same. On remembered routes (FAIL false) a
	// mismatch stores nothing; on routes read in this transaction (FAIL true) it fails the
	// statement with route_epoch_moved's serialization failure (migration 00032), which tells
	// it from a duplicate, and Admit reads the routes again. That is what makes a subscription
	// that commits while the delivery waits for another connection's lifecycle lock receive it:
	// the routes statement's snapshot predates the subscription. A NULL epoch admits. The CASE
	// evaluates route_epoch_moved only on a mismatch.
	epochGuard = `CASE WHEN EPOCH::bigint IS NULL OR coalesce((SELECT e.epoch FROM route_epoch e), 0) = EPOCH::bigint THEN true
     WHEN FAIL::boolean THEN route_epoch_moved() ELSE false END`

	// lockRemembered takes the lifecycle locks of the connections of remembered routes, in the
	// same mode and order as the routes statement, but NOWAIT: a lock a lifecycle change holds
	// fails the statement at once, and admission reads the routes instead, where it waits and
	// tells a change it waited for (503) from one that came before.
	lockRemembered = `
SELECT id FROM connection
WHERE id = ANY ($1::bigint[])
ORDER BY id
FOR SHARE NOWAIT`
)
