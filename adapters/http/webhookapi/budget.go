package webhookapi

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"

	"github.com/hephaestus-dev/hephaestus/application/admission"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// DefaultInflightBytes is HEPHAESTUS_WEBHOOK_INFLIGHT_BYTES's default: 64 MiB of request
// bodies held by all webhook requests of one server together. Sized for a 2-core, 1 GiB
// container: a held body is copied about twice more while it is admitted (the provider's
// parse and pgx's send buffer), and Go's heap may grow to twice its live size before a
// collection (GOGC=100), so 64 MiB of bodies costs at most about 400 MiB of heap, leaving the
// rest of the container to the pools, the claimers' handlers and PostgreSQL's client buffers.
// It holds one body of the largest size (25 MiB, 41 MiB while its buffer grows) beside the
// headroom, so a big delivery is never refused on an idle server, and some thousand typical
// deliveries (a few KiB each).
const DefaultInflightBytes = 64 << 20

// firstChunk is the most a request reserves and allocates before its bytes arrive: a declared
// Content-Length is not trusted for more. The buffer then doubles as bytes arrive.
const firstChunk = 32 << 10

// smallRequest is the most a request may have reserved and still draw on the headroom: a
// buffer of 64 KiB while the 32 KiB one is copied into it (96 KiB), rounded up. Nearly every
// provider delivery is smaller than 64 KiB (an issue or pull request event is 10–30 KiB).
const smallRequest = 128 << 10

// BudgetConfig shapes a Budget. Zero fields take the defaults, which are also the numbers
// docs/configuration.md and docs/admission.md ("At the edge") give.
type BudgetConfig struct {
	// Limit is the bytes all webhook requests of the server hold together
	// (HEPHAESTUS_WEBHOOK_INFLIGHT_BYTES, default DefaultInflightBytes).
	Limit int64
	// MaxBody is the largest body accepted (HEPHAESTUS_WEBHOOK_MAX_BYTES): one client's share
	// is never less than reading one such body reserves at its peak (0: no such floor).
	MaxBody int64
	// Headroom is the part of Limit only small requests (bodies up to 64 KiB) may use, so
	// large uploads, stalled or not, never take the room ordinary deliveries need. Default
	// Limit/4.
	Headroom int64
	// ClientShare is the most one client (an IPv4 address, an IPv6 /64) holds at once.
	// Default Limit/2, raised to what one MaxBody body needs, at most Limit-Headroom.
	ClientShare int64
	// ClientHeadroom is the most one client may hold while the shared part is full and its
	// request draws on the headroom, so no one client (or a few) can fill the headroom with
	// small stalled uploads. Default Headroom/8 (2 MiB of 16: some twenty small deliveries of
	// one client in flight at once).
	ClientHeadroom int64
}

// peakReservation is the most reading a body of n bytes reserves at once: the buffer doubles
// from firstChunk up to n+1 bytes, and both buffers are held while one is copied.
func peakReservation(n int64) int64 {
	peak, capacity := int64(firstChunk), int64(firstChunk)
	for capacity < n+1 {
		next := min(2*capacity, n+1)
		peak = max(peak, capacity+next)
		capacity = next
	}
	return peak
}

func (c *BudgetConfig) setDefaults() {
	if c.Limit == 0 {
		c.Limit = DefaultInflightBytes
	}
	if c.Headroom == 0 {
		c.Headroom = c.Limit / 4
	}
	if c.ClientShare == 0 {
		c.ClientShare = min(max(c.Limit/2, peakReservation(c.MaxBody)), c.Limit-c.Headroom)
	}
	if c.ClientHeadroom == 0 {
		c.ClientHeadroom = max(c.Headroom/8, smallRequest)
	}
}

func (c BudgetConfig) validate() error {
	switch {
	case c.Limit < firstChunk:
		return fmt.Errorf("webhookapi: the in-flight byte budget must be at least %d, got %d", firstChunk, c.Limit)
	case c.Headroom < 0 || c.Headroom >= c.Limit:
		return fmt.Errorf("webhookapi: the headroom must be between 0 and the budget (%d), got %d", c.Limit, c.Headroom)
	case c.ClientShare < firstChunk || c.ClientShare > c.Limit:
		return fmt.Errorf("webhookapi: a client's share must be between %d and the budget (%d), got %d", firstChunk, c.Limit, c.ClientShare)
	case c.ClientHeadroom < 0:
		return fmt.Errorf("webhookapi: a client's headroom must not be negative, got %d", c.ClientHeadroom)
	}
	return nil
}

// Budget bounds the bytes of request bodies that webhook requests hold in memory together,
// and shares them out so that no client can hold them all. A request reserves its buffer's
// capacity before allocating it (at most firstChunk before any byte arrived, then doubling as
// bytes arrive) and gives it back when its answer is written, so a slow sender holds only what
// it sent, and the read timeout cuts it off.
//
// Who may reserve: nobody past Limit; nobody past its client's ClientShare; a request that
// has reserved more than a small one needs (smallRequest) only while Limit-Headroom is not
// reached; and, past Limit-Headroom, only a client holding at most ClientHeadroom. Stalled
// uploads of one client therefore take at most its share, large ones never the headroom, and a
// signed delivery of ordinary size from another client finds room.
type Budget struct {
	cfg BudgetConfig

	mu      sync.Mutex
	held    int64
	peak    int64
	clients map[string]int64 // bytes held per client, only clients holding some
}

// NewBudget makes a budget of limit bytes with the default shares. Errors: limit below
// firstChunk (no body could be read).
func NewBudget(limit int64) (*Budget, error) {
	if limit < firstChunk {
		return nil, fmt.Errorf("webhookapi: the in-flight byte budget must be at least %d, got %d", firstChunk, limit)
	}
	return NewSharedBudget(BudgetConfig{Limit: limit})
}

// NewSharedBudget makes a budget shaped by cfg. Errors: a share out of its range.
func NewSharedBudget(cfg BudgetConfig) (*Budget, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Budget{cfg: cfg, clients: map[string]int64{}}, nil
}

// Limit is the budget's size in bytes.
func (b *Budget) Limit() int64 { return b.cfg.Limit }

// Config is the budget's shape, defaults applied.
func (b *Budget) Config() BudgetConfig { return b.cfg }

// Held is the number of bytes reserved now.
func (b *Budget) Held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held
}

// HeldBy is the number of bytes a client (as ClientOf names it) holds now.
func (b *Budget) HeldBy(client string) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.clients[client]
}

// Peak is the most bytes ever reserved at once.
func (b *Budget) Peak() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}

// ClientOf names the client of a request for its share: the peer's IP address, an IPv6
// address by its /64 (what one host is usually given). No forwarded header is trusted; behind
// a reverse proxy every request is the proxy's, and the shares then only bound the total.
func ClientOf(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	addr = addr.Unmap()
	if addr.Is6() {
		if p, err := addr.Prefix(64); err == nil {
			return p.String()
		}
	}
	return addr.String()
}

// take reserves n more bytes for a request of client that holds requested bytes already, or
// nothing when the rules above refuse them.
func (b *Budget) take(client string, requested, n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	mine := b.clients[client]
	total := b.held + n
	switch {
	case total > b.cfg.Limit, mine+n > b.cfg.ClientShare:
		return false
	case total > b.cfg.Limit-b.cfg.Headroom && (requested+n > smallRequest || mine+n > b.cfg.ClientHeadroom):
		return false
	}
	b.held = total
	b.clients[client] = mine + n
	b.peak = max(b.peak, total)
	return true
}

func (b *Budget) give(client string, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held -= n
	if left := b.clients[client] - n; left > 0 {
		b.clients[client] = left
	} else {
		delete(b.clients, client)
	}
}

// errOverBudget is the answer when the budget, or the client's share of it, cannot cover the
// next bytes: 503 retry, and the provider delivers again later.
var errOverBudget = ports.Reject(ports.ErrUnavailable, admission.ReasonOverloaded, "webhook bodies in flight at the byte budget or the client's share")

// bodyReader reads one request body under the size limit and the budget. Release gives back
// what it reserved; it must be called once the body is no longer used.
type bodyReader struct {
	budget   *Budget
	client   string
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
	if !r.budget.take(r.client, r.reserved, n) {
		return false
	}
	r.reserved += n
	return true
}

func (r *bodyReader) release(n int64) {
	r.budget.give(r.client, n)
	r.reserved -= n
}

// Release gives back everything still reserved.
func (r *bodyReader) Release() {
	if r.reserved > 0 {
		r.budget.give(r.client, r.reserved)
		r.reserved = 0
	}
}
