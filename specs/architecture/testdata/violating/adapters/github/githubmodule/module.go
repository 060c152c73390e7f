package githubmodule

// The module imports nothing of the engine itself: it reaches the stores through its API
// client (managementstore), its mirror (pgutil) and the kit (syncjobs), which StoreReach finds.
import (
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubapi"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit"
)

var _ githubapi.Client
var _ githubmirror.Store
var _ providerkit.Deps
