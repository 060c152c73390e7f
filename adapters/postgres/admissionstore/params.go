package admissionstore

// Why this file: the single-row insert is on every delivery's response path, and pgx's generic
// parameter encoding (a type-map lookup, an encode plan and a boxed value per parameter, and a
// copy of the payload into a buffer that starts small for every statement) was the largest
// part of admission's own CPU after the round trip itself. Its parameters have fixed types,
// so they are written here in PostgreSQL's text format, which the server parses as it would
// any literal: the payload is passed as it was received, without a copy.

import (
	"strconv"
	"time"

	"github.com/hephaestus-dev/hephaestus/ports"
)

// timestampFormat is timestamptz's text input for a UTC time at PostgreSQL's precision.
const timestampFormat = "2006-01-02 15:04:05.999999Z07:00"

// rowParams holds insertDelivery's 13 parameters in text format: values[i] is parameter i+1,
// nil for NULL. The slices point into buf, or into the row's own payload, until the next
// encode; the pipeline copies them into its write buffer when the statement is queued.
type rowParams struct {
	values [][]byte
	buf    []byte
}

// encode writes r's parameters, then the epoch guard's ($12 epoch, nil for NULL; $13 whether a
// mismatch fails the statement). Times are truncated to the microsecond as pgx's binary
// encoding truncates them (PostgreSQL's text input would round).
func (p *rowParams) encode(r ports.NewRow, epoch *int64, failOnMismatch bool) {
	d := r.Delivery
	p.buf = p.buf[:0]
	var ends [12]int // where each of the parameters written into buf ends
	n := 0
	mark := func() { ends[n] = len(p.buf); n++ }
	p.buf = strconv.AppendInt(p.buf, d.WorkspaceID(), 10)
	mark()
	p.buf = strconv.AppendInt(p.buf, r.ConnectionID, 10)
	mark()
	for _, s := range [...]string{d.Provider().String(), d.EventType(), d.DeliveryKey(), d.Scope().String(), d.Subject().String()} {
		p.buf = append(p.buf, s...)
		mark()
	}
	p.buf = appendHeadersJSON(p.buf, r.Headers)
	mark()
	p.buf = d.DueAt().Truncate(time.Microsecond).UTC().AppendFormat(p.buf, timestampFormat)
	mark()
	p.buf = d.ReceivedAt().Truncate(time.Microsecond).UTC().AppendFormat(p.buf, timestampFormat)
	mark()
	if epoch != nil {
		p.buf = strconv.AppendInt(p.buf, *epoch, 10)
		mark()
	}

	if cap(p.values) < 13 {
		p.values = make([][]byte, 13)
	}
	p.values = p.values[:13]
	slice := func(i int) []byte {
		start := 0
		if i > 0 {
			start = ends[i-1]
		}
		return p.buf[start:ends[i]:ends[i]]
	}
	for i := range 7 { // $1 … $7
		p.values[i] = slice(i)
	}
	p.values[7] = r.Payload   // $8, JSON text as received
	for i := 7; i < 10; i++ { // $9 headers, $10 due, $11 received
		p.values[i+1] = slice(i)
	}
	p.values[11] = nil // $12: NULL admits
	if epoch != nil {
		p.values[11] = slice(10)
	}
	p.values[12] = falseText
	if failOnMismatch {
		p.values[12] = trueText
	}
}

var trueText, falseText = []byte("t"), []byte("f")
