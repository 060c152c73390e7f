package beaconmodule_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/beacon/beaconmodule"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// feed stands in for the change feed bootstrap hands over (it publishes and removes nothing).
type feed struct{}

func (feed) Publish(context.Context, ports.Tx, int64, change.Change) error { return nil }
func (feed) RemoveChanges(context.Context, ports.Tx, int64, ports.ChangeSelection) (int64, error) {
	return 0, nil
}

// steps stands in for the delivery inbox bootstrap hands over (Build only keeps it).
type steps struct{ ports.DeliveryInbox }

// registry prints what the module registers.
type registry struct{}

func (registry) Register(p provider.Provider, eventType string, _ ports.Handler) error {
	fmt.Println("handler:", p, eventType)
	return nil
}

// A provider built only from the kit: its module reads its own variables (LoadConfig), and
// Build makes the webhook, handlers, mirror store and read API from providerkit.Deps, as the
// server does for every module of its list.
func Example() {
	env := map[string]string{beaconmodule.EnvMaxTitleBytes: "120"}
	cfg, err := beaconmodule.LoadConfig(providerkit.Env{Getenv: func(n string) string { return env[n] }})
	if err != nil {
		panic(err)
	}
	module := providerkit.Load(func(providerkit.Env) (beaconmodule.Config, error) { return cfg, nil }, beaconmodule.New)
	m, err := module(providerkit.Env{})
	if err != nil {
		panic(err)
	}
	fmt.Println("provider:", m.Provider(), "kinds:", m.Kinds(), "max title bytes:", cfg.MaxTitleBytes)

	// The pool connects lazily: building opens no connection.
	pool, err := pgxpool.New(context.Background(), "postgres://127.0.0.1:1/none")
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	p, err := m.Build(providerkit.Deps{Pool: pool, Inbox: steps{}, Changes: feed{}})
	if err != nil {
		panic(err)
	}
	if err := p.RegisterHandlers(registry{}); err != nil {
		panic(err)
	}
	fmt.Println("person view members:", p.PersonFields().Views.IDs, p.PersonFields().Views.Names)
	_, hasRoutes := p.(providerkit.Routes)
	fmt.Println("per connection:", p.Webhook().PerConnection(), "read API:", hasRoutes)

	// A delivery signed with the connection's secret is verified, then parsed.
	body := []byte(`{"id":"dlv_1","type":"incident.opened","incident":{"id":"inc_42","title":"API latency"}}`)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, []byte("bcn_whs_secret"))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	req := ports.Request{Headers: http.Header{"Beacon-Signature": {"t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))}}, Body: body}
	conn := &ports.SourceConnection{ID: 3, Secret: []byte("bcn_whs_secret")}
	fmt.Println("verified:", p.Webhook().Verify(req, conn) == nil)
	envelope, err := p.Webhook().Parse(req, conn)
	if err != nil {
		panic(err)
	}
	fmt.Println("envelope:", envelope.EventType, envelope.DeliveryKey, envelope.Subject)
	var _ contract.Provider = p

	// Output:
	// provider: BEACON kinds: [BEACON] max title bytes: 120
	// handler: BEACON incident.opened
	// handler: BEACON incident.updated
	// handler: BEACON incident.resolved
	// person view members: [authorId] [authorName]
	// per connection: true read API: true
	// verified: true
	// envelope: incident.opened dlv_1 beacon:incident:inc_42
}
