// Package postgres holds the PostgreSQL adapters: the inbox store, the admission store, the
// connection directory, the step runner and the migration runner. pgx never leaves this
// package tree: its errors are translated into the domain's and the ports' errors here.
package postgres

import (
	"context"
	"database/sql"
	"fmt"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", used by goose only
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/hephaestus-dev/hephaestus/migrations"
)

// Migrate applies the embedded migrations that databaseURL does not have yet. It is safe to
// run from several servers at once: goose takes a session advisory lock while it works.
func Migrate(ctx context.Context, databaseURL string) (applied int, err error) {
	db, err := sql.Open("pgx", databaseURL)
	if err != nil {
		return 0, fmt.Errorf("open database for migrations: %w", err)
	}
	defer db.Close()
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return 0, fmt.Errorf("prepare migration lock: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS, goose.WithSessionLocker(locker))
	if err != nil {
		return 0, fmt.Errorf("prepare migrations: %w", err)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return 0, fmt.Errorf("apply migrations: %w", err)
	}
	return len(results), nil
}

// Pending reports how many embedded migrations databaseURL still lacks (/readyz needs 0).
func Pending(ctx context.Context, db *sql.DB) (int, error) {
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS)
	if err != nil {
		return 0, fmt.Errorf("prepare migrations: %w", err)
	}
	has, err := p.HasPending(ctx)
	if err != nil || !has {
		return 0, err
	}
	status, err := p.Status(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, s := range status {
		if s.State == goose.StatePending {
			n++
		}
	}
	return n, nil
}
