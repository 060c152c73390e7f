// Package httperr is the one place that maps the core's errors to HTTP statuses and JSON
// error bodies ({"error":"<kebab-case-code>"}).
package httperr

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/replayjob"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// RetryAfterSeconds is sent with every 503 and 429.
const RetryAfterSeconds = "5"

var codes = []struct {
	err    error
	status int
	code   string
}{
	{ports.ErrUnauthenticated, http.StatusUnauthorized, "unauthenticated"},
	{ports.ErrForbidden, http.StatusForbidden, "forbidden"},
	{ports.ErrNotFound, http.StatusNotFound, "not-found"},
	{ports.ErrConflict, http.StatusConflict, "conflict"},
	{ports.ErrMalformed, http.StatusBadRequest, "bad-request"},
	{ports.ErrTooLarge, http.StatusRequestEntityTooLarge, "too-large"},
	{ports.ErrUnprocessable, http.StatusUnprocessableEntity, "unprocessable"},
	{ports.ErrUnavailable, http.StatusServiceUnavailable, "retry"},
	{ports.ErrTooManyRequests, http.StatusTooManyRequests, "retry"},
	{connection.ErrForbiddenTransition, http.StatusConflict, "forbidden-transition"},
	{replayjob.ErrLimit, http.StatusConflict, "replay-limit"},
}

// Status returns the HTTP status and error code of err. A RejectedError keeps its kind's status
// and uses its reason as the code where the contract shows the reason (400, 403 and 409: e.g.
// "resource-not-accessible", "install-flow-required"); 401 and 503 keep their generic codes so
// nothing helps a forger or leaks internals. A PostgreSQL data exception (SQLSTATE class 22)
// is 400 bad-request. Unknown errors are 500.
func Status(err error) (int, string) {
	var transient *inbox.TransientError
	if errors.As(err, &transient) || errors.Is(err, inbox.ErrBusy) {
		return http.StatusServiceUnavailable, "retry"
	}
	if dataException(err) {
		// PostgreSQL refused a value of the request (bad encoding, an escape jsonb refuses, a
		// number out of range): the caller's input, never a fault of ours, and never retried.
		return http.StatusBadRequest, "bad-request"
	}
	for _, c := range codes {
		if errors.Is(err, c.err) {
			var rej *ports.RejectedError
			if errors.As(err, &rej) && showsReason(c.status) && rej.Reason != "" {
				return c.status, rej.Reason
			}
			return c.status, c.code
		}
	}
	return http.StatusInternalServerError, "internal"
}

// sqlState is what *pgconn.PgError offers; read through an interface so the status map needs
// no driver import.
type sqlState interface{ SQLState() string }

// dataException reports a PostgreSQL data exception (SQLSTATE class 22: 22P02 invalid text
// representation, 22P05 untranslatable character, 22021 bad encoding, 22003 out of range …)
// anywhere in err's chain. The receiver and the management API refuse such input before the
// database sees it; this is the backstop for what they miss.
func dataException(err error) bool {
	var st sqlState
	if !errors.As(err, &st) {
		return false
	}
	code := st.SQLState()
	return len(code) == 5 && code[:2] == "22"
}

func showsReason(status int) bool {
	return status == http.StatusBadRequest || status == http.StatusForbidden || status == http.StatusConflict ||
		status == http.StatusUnprocessableEntity
}

// Write aborts the request with err's status and body; 503s and 429s carry Retry-After.
func Write(c *gin.Context, err error) {
	status, code := Status(err)
	if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests {
		c.Header("Retry-After", RetryAfterSeconds)
	}
	c.AbortWithStatusJSON(status, gin.H{"error": code})
}

// WriteCode aborts the request with an explicit status and code.
func WriteCode(c *gin.Context, status int, code string) {
	if status == http.StatusServiceUnavailable {
		c.Header("Retry-After", RetryAfterSeconds)
	}
	c.AbortWithStatusJSON(status, gin.H{"error": code})
}

// WriteLogged is Write that also logs the cause of a 500 answer (what failed, the route and the
// error text; the ports' error texts carry no secret) when log is not nil: a read API's one
// failure path.
func WriteLogged(c *gin.Context, err error, log ports.Logger, what string) {
	if status, _ := Status(err); status == http.StatusInternalServerError && log != nil {
		log.Errorw(what, "route", c.FullPath(), "error", err.Error())
	}
	Write(c, err)
}
