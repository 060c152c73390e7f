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

// rowParams holds insertDelivery's 14 parameters in text format: values[i] is parameter i+1,
// nil for NULL. The slices point into buf, or into the row's own payload, until the next
// encode; the pipeline copies them into its write buffer when the statement is queued.
type rowParams struct {
	values [rowParamCount][]byte
	buf    []byte
}

const (
	rowParamCount = 14
	payloadParam  = 7  // $8, passed as received
	traceParam    = 11 // $12, the traceparent, NULL when the request was not traced
	epochParam    = 12 // $13, NULL when there is no epoch
)

// encode writes r's parameters ($12 the traceparent, nil for NULL), then the epoch guard's
// ($13 epoch, nil for NULL; $14 whether a mismatch fails the statement). Times are truncated to the microsecond as pgx's binary
// encoding truncates them (PostgreSQL's text input would round).
func (p *rowParams) encode(r ports.NewRow, epoch *int64, failOnMismatch bool) {
	d := r.Delivery
	b := p.buf[:0]
	var ends [rowParamCount]int // parameter i is b[ends[i-1]:ends[i]]
	i := 0
	next := func() { ends[i] = len(b); i++ }
	b = strconv.AppendInt(b, d.WorkspaceID(), 10) // $1
	next()
	b = strconv.AppendInt(b, r.ConnectionID, 10) // $2
	next()
	for _, s := range [...]string{d.Provider().String(), d.EventType(), d.DeliveryKey(), d.Scope().String(), d.Subject().String()} {
		b = append(b, s...) // $3 … $7
		next()
	}
	next()                              // $8: the payload, set below
	b = appendHeadersJSON(b, r.Headers) // $9
	next()
	b = d.DueAt().Truncate(time.Microsecond).UTC().AppendFormat(b, timestampFormat) // $10
	next()
	b = d.ReceivedAt().Truncate(time.Microsecond).UTC().AppendFormat(b, timestampFormat) // $11
	next()
	b = append(b, r.TraceParent...) // $12
	next()
	if epoch != nil {
		b = strconv.AppendInt(b, *epoch, 10) // $13
	}
	next()
	b = strconv.AppendBool(b, failOnMismatch) // $14
	next()

	start := 0
	for j, end := range ends {
		p.values[j] = b[start:end:end]
		start = end
	}
	p.values[payloadParam] = r.Payload
	if r.TraceParent == "" {
		p.values[traceParam] = nil
	}
	if epoch == nil {
		p.values[epochParam] = nil
	}
	p.buf = b
}
