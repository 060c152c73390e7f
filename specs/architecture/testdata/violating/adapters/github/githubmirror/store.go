package githubmirror

// A mirror store may still use the engine's transaction helpers.
import "github.com/hephaestus-dev/hephaestus/adapters/postgres/pgutil"

type Store struct{}

var _ = pgutil.Interpret
