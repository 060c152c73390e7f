package signin

// An HTTP adapter that imports no store itself but reaches one through the console.
import "github.com/hephaestus-dev/hephaestus/adapters/http/console"

var _ = console.Path
