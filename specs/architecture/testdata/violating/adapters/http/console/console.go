package console

// An HTTP adapter that reads the session store's own type.
import "github.com/hephaestus-dev/hephaestus/adapters/postgres/consolesession"

var _ consolesession.Session
