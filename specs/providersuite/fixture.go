// Package providersuite is the conformance suite every provider runs once, from its own spec
// package, with one call: `var _ = providersuite.Run(fixture)`. It proves what every provider
// must do, whatever it mirrors:
//
//   - verification before parse: a wrongly signed body is refused as unauthenticated whatever
//     it holds (its JSON is never looked at), a correctly signed one is verified whatever it
//     holds, and a signed body that is not JSON of the provider's shape is refused as malformed;
//   - only declared rejection reasons: every refusal and drop names a reason the module lists
//     in RejectionReasons (so webhook_rejected_total exports it from start);
//   - fuzz seeds for Parse and Verify in adapters/<p>/testdata/fuzz;
//   - idempotent named steps: a retried delivery skips the steps it committed (the step ledger
//     and the mirror rows are not written again);
//   - person tags on every view member of the read API that sounds like a person, each declared
//     to person erasure;
//   - person erasure reaches every mirror table, the inbox and the change feed;
//   - the teardown of a connection removes the workspace's mirror rows and the data of its changes;
//   - the read API answers 401 without a token, 403 to another workspace's member, 404 for an
//     unknown workspace, and shows a member only their workspace's rows.
//
// A provider supplies a Fixture: data (its name, folder, source URL, a valid body, the read API
// paths) and a few functions (sign a request, connect a workspace, the events to mirror, build
// its handlers on a publishing mirror, tear a connection down). The suite builds its own
// handler registry, change feed and erasure store on the spec package's Harness (database and
// read API server, shared by all the package's specs), so a provider's other specs keep their
// own doubles.
package providersuite

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// Fixture is one provider as the conformance suite sees it.
type Fixture struct {
	// Name labels the suite's containers ("GitLab").
	Name string
	// Package is the provider's folder under adapters/ ("gitlab"): where its fuzz seeds
	// (testdata/fuzz) and its read API (<Package>read) are, and the prefix of its mirror
	// tables ("gitlab_").
	Package string
	// Harness is the spec package's harness: the database, the management use case and the
	// server its read API runs on (support.NewHarness with ServeRead).
	Harness *support.Harness

	// Webhook is the provider's receiving side, and Reasons its module's declaration of every
	// reason that webhook refuses or drops a delivery with.
	Webhook contract.Webhook
	Reasons contract.RejectionReasoner
	// Connection is the connection a delivery is verified with (nil for a provider whose
	// secret is app-level configuration).
	Connection *ports.SourceConnection
	// Request is a delivery of body as the provider sends it (event and delivery headers),
	// signed with the secret Webhook verifies with, or with another secret when !signed.
	Request func(body []byte, signed bool) ports.Request
	// Body is a delivery body that Parse turns into an envelope to store.
	Body []byte

	// Source is the source server URL of the provider's connections and of the rows the
	// suite stores (person erasure's scope).
	Source string
	// Connect stores an ACTIVE connection of workspace ws with source Source, and whatever
	// subscriptions Events need, and returns its id.
	Connect func(ctx context.Context, pool *pgxpool.Pool, ws int64) int64
	// Handlers registers the provider's handlers in reg on inbox and its mirror store, with the
	// store publishing its changes through pub, as bootstrap composes them; it returns the
	// mirror store, which person erasure runs.
	Handlers func(pool *pgxpool.Pool, inbox ports.DeliveryInbox, reg *consumer.Registry, pub ports.ChangePublisher) contract.PersonDataStore
	// PersonFields is the read API's declaration of where payloads and views name a person.
	PersonFields func() (contract.PersonFields, error)
	// InstallationNamespace is the source admission stores on installation rows that name no
	// connection yet ("" when the provider has none).
	InstallationNamespace string
	// Events are deliveries to workspace ws that the handlers mirror through named steps and
	// that the read API shows: marker stands in a text every list of ReadPaths shows, and
	// Person is named by them.
	Events func(ws int64, marker string) []Event
	// Person is whom Events name.
	Person Person
	// Teardown tears the connection conn of workspace ws down as the provider does when it is
	// uninstalled.
	Teardown func(ctx context.Context, pool *pgxpool.Pool, ws, conn int64)
	// ReadPaths are the read API paths, under the workspace slug, of what Events mirrored: its
	// lists and the lists under one of its resources.
	ReadPaths func(slug string) []string
}

// Event is one delivery as admission stores it.
type Event struct {
	Type    string // the provider's event type ("Merge Request Hook")
	Subject string // the inbox subject ("gitlab:project:101")
	Payload string // the JSON body the handler receives
}

// Person is the person the fixture's events name: how erasure identifies them (at least one of
// ID, Login, Email) and what of theirs is searched for before and after (Traces: ids, names,
// addresses, their own words).
type Person struct {
	ID, Login, Email string
	Traces           []string
}
