package providerkit

// The kit that hands a provider a PostgreSQL store instead of a port.
import (
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/syncjobs"
	"github.com/hephaestus-dev/hephaestus/ports"
)

type Deps struct {
	Jobs  *syncjobs.Store
	Inbox ports.DeliveryInbox
}
