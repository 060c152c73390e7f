// Package migrations holds the SQL migrations of the service, embedded into the binary.
//
// Files are goose migrations (`-- +goose Up` / `-- +goose Down`), applied in name order by
// adapters/postgres.Migrate, which `hephaestus migrate` and `hephaestus serve` call.
package migrations

import "embed"

// FS is the embedded set of migration files.
//
//go:embed *.sql
var FS embed.FS
