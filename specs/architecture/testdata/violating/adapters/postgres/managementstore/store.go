package managementstore

// The engine's stores share their helpers.
import "github.com/hephaestus-dev/hephaestus/adapters/postgres/pgutil"

var _ = pgutil.Interpret
