package webhookapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/hephaestus-dev/hephaestus/application/admission"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// DefaultInflightBytes is HEPHAESTUS_WEBHOOK_INFLIGHT_BYTES's default: 64 MiB of request
// bodies held by all webhook requests of one server together. Sized for a 2-core, 1 GiB
// container: a held body is copied about twice more while it is admitted (the provider's
// parse and pgx's send buffer), and Go's heap may grow to twice its live size before a
// collection (GOGC=100), so 64 MiB of bodies costs at most about 400 MiB of heap, leaving the
// rest of the container to the pools, the claimers' handlers and PostgreSQL's client buffers.
// It holds two bodies of the largest size (25 MiB) at once, so a big delivery is never refused
// on an idle server, and some thousand typical deliveries (a few KiB each).
const DefaultInflightBytes = 64 << 20

// firstChunk is the most a request reserves and allocates before its bytes arrive: a declared
// Content-Length is not trusted for more. The buffer then doubles as bytes arrive.
const firstChunk = 32 << 10

// Budget bounds the bytes of request bodies that webhook requests hold in memory together. A
// request reserves its buffer's capacity before allocating it (at most firstChunk before any
// byte arrived, then doubling as bytes arrive) and gives it back when its answer is written,
// so a slow sender holds only what it sent, and the read timeout cuts it off.
type Budget struct {
	limit int64
	held  atomic.Int64
	peak  atomic.Int64
}

// NewBudget makes a budget of limit bytes. Errors: limit below firstChunk (no body could be read).
func NewBudget(limit int64) (*Budget, error) {
	if limit < firstChunk {
		return nil, fmt.Errorf("webhookapi: the in-flight byte budget must be at least %d, got %d", firstChunk, limit)
	}
	return &Budget{limit: limit}, nil
}

// Limit is the budget's size in bytes.
func (b *Budget) Limit() int64 { return b.limit }

// Held is the number of bytes reserved now.
func (b *Budget) Held() int64 { return b.held.Load() }

// Peak is the most bytes ever reserved at once.
func (b *Budget) Peak() int64 { return b.peak.Load() }

// take reserves n bytes, or nothing when they do not fit.
func (b *Budget) take(n int64) bool {
	for {
		cur := b.held.Load()
		if cur+n > b.limit {
			return false
		}
		if b.held.CompareAndSwap(cur, cur+n) {
			for {
				p := b.peak.Load()
				if cur+n <= p || b.peak.CompareAndSwap(p, cur+n) {
					return true
				}
			}
		}
	}
}

func (b *Budget) give(n int64) { b.held.Add(-n) }

// errOverBudget is the answer when the budget cannot cover the next bytes: 503 retry, and the
// provider delivers again later.
var errOverBudget = ports.Reject(ports.ErrUnavailable, admission.ReasonOverloaded, "webhook bodies in flight at the byte budget")

// bodyReader reads one request body under the size limit and the budget. Release gives back
// what it reserved; it must be called once the body is no longer used.
type bodyReader struct {
	budget   *Budget
	reserved int64
}

// read returns the whole body. It refuses a declared length over maxBytes before reading, a
// longer stream when it gets there, and answers errOverBudget when the budget cannot cover
// the buffer the next bytes need (before the first byte is read, when the budget is spent).
// Errors: *ports.RejectedError of kind ErrTooLarge, ErrUnavailable or ErrMalformed.
func (r *bodyReader) read(w http.ResponseWriter, req *http.Request, maxBytes int64) ([]byte, error) {
	declared := req.ContentLength
	if declared > maxBytes {
		return nil, ports.Reject(ports.ErrTooLarge, admission.ReasonTooLarge, "declared length over the limit")
	}
	// The buffer never needs more than one byte past what may arrive: the declared length
	// (net/http ends the body there) or the limit (one byte more proves a longer body).
	ceiling := maxBytes + 1
	if declared >= 0 {
		ceiling = declared + 1
	}
	size := min(int64(firstChunk), ceiling)
	if !r.reserve(size) {
		return nil, errOverBudget
	}
	buf := make([]byte, 0, size)
	body := http.MaxBytesReader(w, req.Body, maxBytes)
	for {
		if len(buf) == cap(buf) {
			grown := min(2*int64(cap(buf)), ceiling)
			if grown <= int64(cap(buf)) {
				grown = int64(cap(buf)) + 1 // a body longer than declared: MaxBytesReader or EOF decides
			}
			// Both buffers live during the copy: reserve the new one before giving the old back.
			if !r.reserve(grown) {
				return nil, errOverBudget
			}
			next := make([]byte, len(buf), grown)
			copy(next, buf)
			r.release(int64(cap(buf)))
			buf = next
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			return nil, ports.Reject(ports.ErrTooLarge, admission.ReasonTooLarge, "body over the limit")
		case errors.Is(err, io.EOF):
			return buf, nil
		case err != nil:
			return nil, ports.Reject(ports.ErrMalformed, admission.ReasonUnreadable, err.Error())
		}
	}
}

func (r *bodyReader) reserve(n int64) bool {
	if !r.budget.take(n) {
		return false
	}
	r.reserved += n
	return true
}

func (r *bodyReader) release(n int64) {
	r.budget.give(n)
	r.reserved -= n
}

// Release gives back everything still reserved.
func (r *bodyReader) Release() {
	if r.reserved > 0 {
		r.budget.give(r.reserved)
		r.reserved = 0
	}
}
