package operatorapi

import (
	"errors"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/adapters/http/httperr"
	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// ReadLimit bounds the operator reads of the inbox (deliveries, dead letters, rejections, inbox
// counts) that one account has in flight on this server, across the API and the console, which
// share one ReadLimit. The reads run on their own small pool with a statement timeout; this keeps
// one caller from holding all of that pool's connections while other callers' reads wait. A read
// past the limit is refused at once with ports.ErrTooManyRequests (429 retry, Retry-After), not
// queued: a queue would only move the wait into this server's memory. The configured
// administrator token counts as one account. It is safe for concurrent use.
type ReadLimit struct {
	perAccount int
	mu         sync.Mutex
	inFlight   map[int64]int
}

// NewReadLimit allows perAccount (at least 1) reads in flight per account.
func NewReadLimit(perAccount int) (*ReadLimit, error) {
	if perAccount < 1 {
		return nil, errors.New("operator reads: at least one read per account must be allowed")
	}
	return &ReadLimit{perAccount: perAccount, inFlight: map[int64]int{}}, nil
}

// Acquire takes one of p's reads. It returns the release (call it once the read has ended) or
// ports.ErrTooManyRequests when p already has as many reads in flight as allowed.
func (l *ReadLimit) Acquire(p ports.Principal) (func(), error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight[p.AccountID] >= l.perAccount {
		return nil, ports.ErrTooManyRequests
	}
	l.inFlight[p.AccountID]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.inFlight[p.AccountID]--; l.inFlight[p.AccountID] <= 0 {
				delete(l.inFlight, p.AccountID)
			}
		})
	}, nil
}

// Handler is the API's middleware: it runs after RequireAuth (it reads the principal) and holds
// one of the caller's reads for the rest of the request.
func (l *ReadLimit) Handler() gin.HandlerFunc {
	return func(c *gin.Context) {
		release, err := l.Acquire(managementapi.PrincipalOf(c))
		if err != nil {
			httperr.Write(c, err)
			return
		}
		defer release()
		c.Next()
	}
}
