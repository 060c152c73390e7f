package githubmirror

// A mirror store writes through adapters/sqlkit; the engine's stores are not its to import.
import "github.com/hephaestus-dev/hephaestus/adapters/postgres/pgutil"

type Store struct{}

var _ = pgutil.Interpret
