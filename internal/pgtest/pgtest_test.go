package pgtest_test

import (
	"context"
	"testing"

	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
)

func TestNewDatabaseAppliesMigrationsAndTruncates(t *testing.T) {
	ctx := context.Background()
	db, err := pgtest.NewDatabase(ctx)
	if err != nil {
		t.Skip(err) // without a cluster there is nothing to check; make test always has one
	}
	t.Cleanup(func() { _ = db.Drop(context.Background()) })
	pool, err := db.Pool(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `INSERT INTO workspace (slug, name) VALUES ('a', 'A')`); err != nil {
		t.Fatal(err)
	}
	if err := pgtest.Truncate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM workspace`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("workspace rows after truncate = %d, err %v", n, err)
	}
	var id int64
	if err := pool.QueryRow(ctx, `INSERT INTO workspace (slug, name) VALUES ('a', 'A') RETURNING id`).Scan(&id); err != nil || id != 1 {
		t.Fatalf("identity did not restart: id %d, err %v", id, err)
	}
}
