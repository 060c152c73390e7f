package erasurestore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// How the inbox step rewrites the payloads of other people's deliveries (rewrite.go says
// what): in the pass transaction, after the deletion, it walks the candidate rows of the store
// in id order, a batch of ids at a time; locks and reads a chunk of them (bounded by their
// size), rewrites them in Go and writes back those that changed, each chunk in a savepoint.
// A chunk that fails is rolled back to its savepoint and tried again row by row, each row in a
// savepoint of its own; a row that still fails (a constraint, a trigger, a lock it waited for
// too long, a payload the rewrite refuses) is left as it was and reported, and the pass goes
// on. Memory stays bounded by the batch's ids and one chunk's payloads.
const (
	// rewriteBatchRows is how many candidate ids one query returns.
	rewriteBatchRows = 500
	// rewriteChunkBytes bounds the payload text one chunk reads (a larger payload is a chunk
	// of its own).
	rewriteChunkBytes = 8 << 20
)

// asciiFold lowers the ASCII letters of a text and nothing else, whatever the database's
// collation: the candidate filter folds exactly what the rewrite's patterns ignore.
func asciiFold(expr string) string {
	return `translate(` + expr + `, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')`
}

// mentionsNeedle is true when the payload's JSON text contains one of the needles (text[]
// expression) as a decoded string would show it there: jsonb writes a string with only '"',
// '\' and control characters escaped, one character at a time, so a string that contains a
// value has that value's escaped form (to_jsonb's, without the quotes) in the text. Folded
// on both sides, so no string a rule matches is missed; a needle found elsewhere (a number,
// across two strings) costs a decode that changes nothing.
func mentionsNeedle(payload, needles string) string {
	return `EXISTS (SELECT 1
		FROM unnest(` + needles + `) AS n(v)
		CROSS JOIN LATERAL (SELECT to_jsonb(n.v)::text AS q) j
		WHERE strpos(` + asciiFold(payload+`::text`) + `, ` + asciiFold(`substr(j.q, 2, length(j.q) - 2)`) + `) > 0)`
}

// rewriteCandidates lists, in id order, the ids (and payload sizes) of the rows of one store
// of the request's provider and namespace up to the boundary, after an id, whose text holds a
// needle. Plain read: the rows are locked when their chunk is read. $1 erasure id, $2
// boundary, $3 after id, $4 needles (text[]), $5 limit.
func rewriteCandidates(storeFilter string) string {
	return `
SELECT e.id, octet_length(e.payload::text)
FROM provider_event e
JOIN inbox_erasure r ON r.id = $1
WHERE e.id > $3
  AND e.id <= $2
  AND ` + storeFilter + `
  AND ` + inNamespace("r.provider", "r.source_server_url") + `
  AND ` + mentionsNeedle("e.payload", "$4::text[]") + `
ORDER BY e.id
LIMIT $5`
}

// lockRewriteChunk reads the payloads of the chunk's rows under the same predicates and locks
// them FOR UPDATE until the pass commits: no other writer (another erasure's rewrite of the
// same row) can change a payload between this read and its rewrite, so none is lost. Id
// order, as every pass locks, so two passes cannot deadlock on each other's rows. A row
// deleted meanwhile is simply not returned. $1 erasure id, $2 boundary, $3 ids (bigint[]).
func lockRewriteChunk(storeFilter string) string {
	return `
SELECT e.id, e.payload::text
FROM provider_event e
JOIN inbox_erasure r ON r.id = $1
WHERE e.id = ANY($3::bigint[])
  AND e.id <= $2
  AND ` + storeFilter + `
  AND ` + inNamespace("r.provider", "r.source_server_url") + `
ORDER BY e.id
FOR UPDATE OF e`
}

// writeRewrites stores the rewritten payloads of rows this transaction locked
// (lockRewriteChunk), by id. $1 ids (bigint[]), $2 payloads (text[], JSON).
const writeRewrites = `
UPDATE provider_event e SET payload = v.p::jsonb
FROM unnest($1::bigint[], $2::text[]) AS v(id, p)
WHERE e.id = v.id`

// previewRewrites lists the payloads of the provider and namespace whose text holds a needle
// and that do not name the person (those are deleted), with their store. $1 provider, $2
// source server URL, $3 needles (text[]), $4 identities (jsonb array).
func previewRewrites(f contract.PersonFields) string {
	return `
SELECT e.workspace_id IS NULL, e.payload::text
FROM provider_event e
WHERE ` + inNamespace("$1", "$2") + `
  AND ` + mentionsNeedle("e.payload", "$3::text[]") + `
  AND NOT ` + namesPerson(f, "e.payload", "$4::jsonb")
}

// storeFilter is the SQL that keeps one inbox store's rows.
func storeFilter(store erasure.Store) string {
	if store == erasure.InstallationInbox {
		return "e.workspace_id IS NULL"
	}
	return "e.workspace_id IS NOT NULL"
}

// countRewrites counts, per store, the payloads previewRewrites lists that the rewrite would
// change (workspace rows, installation rows).
func countRewrites(ctx context.Context, tx pgx.Tx, f contract.PersonFields, rw payloadRewrite, scope erasure.Scope, ids []byte) (ws, inst int64, err error) {
	rows, err := tx.Query(ctx, previewRewrites(f), scope.Provider().String(), scope.SourceServerURL(), rw.needles, ids)
	if err != nil {
		return 0, 0, sqlkit.Interpret("count erasure text matches", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			installation bool
			payload      string
		)
		if err := rows.Scan(&installation, &payload); err != nil {
			return 0, 0, sqlkit.Interpret("count erasure text matches", err)
		}
		// A payload the rewrite cannot do counts too: the pass will try it.
		if _, changed, err := rw.Payload([]byte(payload)); changed || err != nil {
			if installation {
				inst++
			} else {
				ws++
			}
		}
	}
	return ws, inst, sqlkit.Interpret("count erasure text matches", rows.Err())
}

// rewritePass is one inbox step's rewrite of the payloads of other people's deliveries.
type rewritePass struct {
	tx        pgx.Tx
	rw        payloadRewrite
	erasureID int64
	boundary  int64
	filter    string
	rewritten int64
	failed    []int64
}

// rewrite runs the rewrite of one store in the pass transaction tx: how many rows it rewrote,
// and the ids of those it could not (at most erasure.MaxFailedRows, lowest first). Errors:
// only those that end the transaction itself (a cancelled context, a lost connection); a row's
// own failure is reported, not returned.
func rewrite(ctx context.Context, tx pgx.Tx, rw payloadRewrite, erasureID int64, store erasure.Store, boundary int64) (int64, []int64, error) {
	if len(rw.rules) == 0 {
		return 0, nil, nil
	}
	p := &rewritePass{tx: tx, rw: rw, erasureID: erasureID, boundary: boundary, filter: storeFilter(store)}
	candidates := rewriteCandidates(p.filter)
	var after int64
	for {
		rows, err := tx.Query(ctx, candidates, erasureID, boundary, after, rw.needles, rewriteBatchRows)
		if err != nil {
			return 0, nil, sqlkit.Interpret("find payloads to rewrite", err)
		}
		type candidate struct{ id, size int64 }
		batch, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (candidate, error) {
			var c candidate
			return c, row.Scan(&c.id, &c.size)
		})
		if err != nil {
			return 0, nil, sqlkit.Interpret("find payloads to rewrite", err)
		}
		if len(batch) == 0 {
			return p.rewritten, p.failed, nil
		}
		var (
			chunk []int64
			bytes int64
		)
		for i, c := range batch {
			chunk, bytes = append(chunk, c.id), bytes+c.size
			if i == len(batch)-1 || bytes+batch[i+1].size > rewriteChunkBytes {
				if err := p.chunk(ctx, chunk); err != nil {
					return 0, nil, err
				}
				chunk, bytes = nil, 0
			}
		}
		after = batch[len(batch)-1].id
	}
}

// chunk rewrites the rows ids in a savepoint; when that fails for a reason of the rows, row by
// row.
func (p *rewritePass) chunk(ctx context.Context, ids []int64) error {
	n, failed, err := p.inSavepoint(ctx, ids)
	if err == nil {
		p.rewritten += n
		p.fail(failed...)
		return nil
	}
	if !rowError(ctx, err) {
		return err
	}
	if len(ids) == 1 {
		p.fail(ids[0])
		return nil
	}
	for _, id := range ids {
		if err := p.chunk(ctx, []int64{id}); err != nil {
			return err
		}
	}
	return nil
}

func (p *rewritePass) fail(ids ...int64) {
	for _, id := range ids {
		if len(p.failed) < erasure.MaxFailedRows {
			p.failed = append(p.failed, id)
		}
	}
}

// errRolledBack wraps a row's failure whose savepoint was rolled back: the transaction goes on.
type errRolledBack struct{ err error }

func (e errRolledBack) Error() string { return e.err.Error() }
func (e errRolledBack) Unwrap() error { return e.err }

// rowError is true for a failure that belongs to the rows of a chunk: the database refused a
// statement (a constraint, a trigger, a lock timeout) and the savepoint was rolled back, while
// the context is still live.
func rowError(ctx context.Context, err error) bool {
	var rb errRolledBack
	var pg *pgconn.PgError
	return ctx.Err() == nil && errors.As(err, &rb) && errors.As(err, &pg)
}

// inSavepoint locks, reads, rewrites and writes the rows ids in one savepoint: the rows it
// rewrote and those the rewrite refused (left as they were). On an error the savepoint is
// rolled back (errRolledBack when that worked).
func (p *rewritePass) inSavepoint(ctx context.Context, ids []int64) (int64, []int64, error) {
	sp, err := p.tx.Begin(ctx)
	if err != nil {
		return 0, nil, sqlkit.Interpret("begin payload rewrite savepoint", err)
	}
	n, refused, err := p.rows(ctx, sp, ids)
	if err == nil {
		if err = sp.Commit(ctx); err == nil {
			return n, refused, nil
		}
	}
	if rbErr := sp.Rollback(context.WithoutCancel(ctx)); rbErr != nil {
		return 0, nil, fmt.Errorf("roll back payload rewrite savepoint: %w (after %w)", rbErr, err)
	}
	return 0, nil, errRolledBack{err}
}

// rows is inSavepoint's work in sp.
func (p *rewritePass) rows(ctx context.Context, sp pgx.Tx, ids []int64) (int64, []int64, error) {
	rows, err := sp.Query(ctx, lockRewriteChunk(p.filter), p.erasureID, p.boundary, ids)
	if err != nil {
		return 0, nil, err
	}
	var (
		outIDs   []int64
		payloads []string
		refused  []int64
	)
	for rows.Next() {
		var (
			id      int64
			payload string
		)
		if err := rows.Scan(&id, &payload); err != nil {
			rows.Close()
			return 0, nil, err
		}
		out, changed, err := p.rw.Payload([]byte(payload))
		if err != nil {
			refused = append(refused, id)
			continue
		}
		if changed {
			outIDs, payloads = append(outIDs, id), append(payloads, string(out))
		}
	}
	if err := rows.Err(); err != nil {
		return 0, nil, err
	}
	if len(outIDs) == 0 {
		return 0, refused, nil
	}
	tag, err := sp.Exec(ctx, writeRewrites, outIDs, payloads)
	if err != nil {
		return 0, nil, err
	}
	return tag.RowsAffected(), refused, nil
}
