// Package pgtest gives specs their own PostgreSQL database on the cluster that `make test`
// starts (HEPHAESTUS_TEST_DATABASE_URL). Each suite gets a fresh database with the migrations
// applied, so packages running in parallel never share rows; each spec truncates what it used.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres"
)

// EnvAdminURL names the variable with the admin URL of the test cluster.
const EnvAdminURL = "HEPHAESTUS_TEST_DATABASE_URL"

// ErrNoCluster says how to run the specs when no test cluster is configured.
var ErrNoCluster = errors.New(EnvAdminURL + " is not set: run the specs with `make test`, " +
	"or start a cluster with `go run ./cmd/pgcluster up -dir /tmp/hx-pg -port 55432` and export " +
	EnvAdminURL + "=postgres://postgres@127.0.0.1:55432/postgres?sslmode=disable")

// Database is one throwaway database on the test cluster.
type Database struct {
	Name     string
	URL      string
	adminURL string
}

// NewDatabase creates a fresh database with the migrations applied.
func NewDatabase(ctx context.Context) (*Database, error) {
	admin := os.Getenv(EnvAdminURL)
	if admin == "" {
		return nil, ErrNoCluster
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "hx_" + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return nil, fmt.Errorf("connect to test cluster: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return nil, fmt.Errorf("create test database: %w", err)
	}
	u, err := url.Parse(admin)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", EnvAdminURL, err)
	}
	u.Path = "/" + name
	d := &Database{Name: name, URL: u.String(), adminURL: admin}
	if _, err := postgres.Migrate(ctx, d.URL); err != nil {
		_ = d.Drop(ctx)
		return nil, err
	}
	return d, nil
}

// Pool opens a pool on the database; maxConns 0 keeps pgx's default. Each "server" of a
// concurrency spec opens its own pool.
func (d *Database) Pool(ctx context.Context, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(d.URL)
	if err != nil {
		return nil, err
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}

// Drop removes the database, ending any session still connected to it.
func (d *Database) Drop(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, d.adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+d.Name+" WITH (FORCE)")
	return err
}

// Truncate empties every table the migrations created (identities restart), keeping the
// migration bookkeeping and the seeded singleton rows (reset; the route epoch only moves on,
// which the truncation of connection does), so each spec starts clean.
func Truncate(ctx context.Context, pool *pgxpool.Pool) error {
	rows, err := pool.Query(ctx, `
		SELECT quote_ident(tablename) FROM pg_tables
		WHERE schemaname = 'public' AND tablename NOT IN ('goose_db_version', 'singleton_lease', 'inbox_erasure_fence', 'route_epoch')`)
	if err != nil {
		return err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	if len(tables) > 0 {
		if _, err := pool.Exec(ctx, "TRUNCATE "+strings.Join(tables, ", ")+" RESTART IDENTITY CASCADE"); err != nil {
			return fmt.Errorf("truncate: %w", err)
		}
	}
	// Seeded singleton rows stay; their state is reset.
	if _, err = pool.Exec(ctx, "UPDATE singleton_lease SET holder = NULL, leased_until = NULL"); err != nil {
		return err
	}
	_, err = pool.Exec(ctx, "UPDATE inbox_erasure_fence SET in_progress = false, erasure_id = NULL, holders = '{}'")
	return err
}
