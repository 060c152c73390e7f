// Package beacon_test proves Beacon, the example provider built only from the kit: the
// conformance suite every provider runs (conformance_test.go), and a whole server with the
// Beacon module added to its list (server_test.go). Beacon's mirror table is not in
// migrations/ (the server does not run Beacon): each database here gets it from
// beaconmirror.Schema, the migration file as a real provider would ship it.
package beacon_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/beacon"
	"github.com/hephaestus-dev/hephaestus/adapters/beacon/beaconmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/beacon/beaconread"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

func TestBeacon(t *testing.T) {
	support.RunSpecs(t, "Beacon, the example provider")
}

// migrate applies the Up part of Beacon's migration to the database of pool, as goose would.
func migrate(ctx context.Context, pool *pgxpool.Pool) {
	_, up, found := strings.Cut(beaconmirror.Schema, "-- +goose Up")
	Expect(found).To(BeTrue(), "schema.sql is a goose migration")
	up, _, found = strings.Cut(up, "-- +goose Down")
	Expect(found).To(BeTrue(), "schema.sql has its Down part")
	_, err := pool.Exec(ctx, up)
	Expect(err).NotTo(HaveOccurred())
}

// harness is the database (with Beacon's table) and the Beacon read API on the real mirror
// store, for the conformance suite.
var harness = support.NewHarness(support.HarnessConfig{
	Provider: beacon.Provider,
	Setup: func(ctx context.Context, h *support.Harness) {
		migrate(ctx, h.Pool)
		store, err := beaconmirror.New(h.Pool)
		Expect(err).NotTo(HaveOccurred())
		h.ServeRead(func(engine *gin.Engine) error {
			return beaconread.Register(engine, beaconread.Config{Auth: h.Management, Members: h.Workspaces, Store: store, Log: support.Logger{}})
		})
		// The harness's client checks every answer against the server's API document, which
		// describes the routes the server serves; Beacon's route is in none (the server does
		// not run Beacon), so its answers are read by a plain client. A real provider documents
		// its routes and keeps the checking client.
		h.Client = &http.Client{Timeout: 10 * time.Second}
	},
})
