package admissionstore

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// benchRow is a delivery as the admission benchmark sends it: a 2 KB payload and the headers
// GitHub's adapter keeps.
func benchRow(b *testing.B) ports.NewRow {
	hub, err := provider.New("GITHUB")
	if err != nil {
		b.Fatal(err)
	}
	subject, err := inbox.NewSubject("github", "repository", "1296269")
	if err != nil {
		b.Fatal(err)
	}
	d, err := inbox.NewDelivery(inbox.Admission{WorkspaceID: 1, Provider: hub, EventType: "issues",
		DeliveryKey: "72d3162e-cc78-11e3-81ab-4c9367dc0958", Subject: subject}, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	return ports.NewRow{Delivery: d, ConnectionID: 1,
		Payload: json.RawMessage(`{"action":"edited","issue":{"body":"` + strings.Repeat("x", 2000) + `"}}`),
		Headers: map[string]string{"X-GitHub-Event": "issues", "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
			"User-Agent": "GitHub-Hookshot/044aadd", "Hephaestus-Source-Server-Url": "https://github.com"}}
}

// BenchmarkInsertOneParams compares the single-row insert's parameter encoding by hand
// (rowParams) with pgx's (ExtendedQueryBuilder.Build with the statement's parameter types):
//
//	go test ./adapters/postgres/admissionstore -run '^$' -bench InsertOneParams -benchmem
func BenchmarkInsertOneParams(b *testing.B) {
	r := benchRow(b)
	epoch := int64(3)
	b.Run("rowParams", func(b *testing.B) {
		var p rowParams
		b.ReportAllocs()
		for b.Loop() {
			p.encode(r, &epoch, false)
		}
	})
	b.Run("pgx", func(b *testing.B) {
		sd := &pgconn.StatementDescription{ParamOIDs: []uint32{pgtype.Int8OID, pgtype.Int8OID, pgtype.TextOID,
			pgtype.TextOID, pgtype.TextOID, pgtype.TextOID, pgtype.TextOID, pgtype.JSONBOID, pgtype.JSONBOID,
			pgtype.TimestamptzOID, pgtype.TimestamptzOID, pgtype.Int8OID, pgtype.BoolOID}}
		m := pgtype.NewMap()
		var eqb pgx.ExtendedQueryBuilder
		d := r.Delivery
		b.ReportAllocs()
		for b.Loop() {
			if err := eqb.Build(m, sd, []any{d.WorkspaceID(), r.ConnectionID, d.Provider().String(), d.EventType(),
				d.DeliveryKey(), d.Scope().String(), d.Subject().String(), r.Payload, string(headersJSON(r.Headers)),
				d.DueAt(), d.ReceivedAt(), &epoch, false}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
