package server

import (
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

func newEngine(log *zap.Logger, ready *readiness, metrics http.Handler, registrars []Registrar) (*gin.Engine, error) {
	// gin's mode is process-wide; release mode only silences its debug route printing.
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	// No proxy is trusted: ClientIP() is the peer address, never a forgeable X-Forwarded-For.
	_ = e.SetTrustedProxies(nil)
	e.HandleMethodNotAllowed = true
	e.Use(recovery(log), requestLog(log))
	e.NoRoute(func(c *gin.Context) { c.JSON(http.StatusNotFound, gin.H{"error": "not-found"}) })
	e.NoMethod(func(c *gin.Context) {
		c.JSON(http.StatusMethodNotAllowed, gin.H{"error": "method-not-allowed"})
	})

	e.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	e.GET("/readyz", readyz(ready))
	e.GET("/metrics", gin.WrapH(metrics))
	for i, r := range registrars {
		if r == nil {
			return nil, fmt.Errorf("server: registrar %d is nil", i)
		}
		if err := r(e); err != nil {
			return nil, fmt.Errorf("server: register routes: %w", err)
		}
	}
	return e, nil
}

// readyz answers 200 while the last readiness check passed within its timeout, else 503; the
// check runs in the background at most once a second (readiness). The cause goes to the log
// only: a load balancer needs the status, an attacker needs nothing.
func readyz(ready *readiness) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := ready.state(c.Request.Context()); err != nil {
			c.Header("Retry-After", "5")
			c.JSON(http.StatusServiceUnavailable, gin.H{"error": "not-ready"})
			return
		}
		c.JSON(http.StatusOK, gin.H{"status": "ok"})
	}
}

// recovery turns a handler panic into a 500 {"error":"internal"} and an error log with the
// route and stack. The request body is never logged: it may hold a provider's payload or a
// secret.
func recovery(log *zap.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			// net/http's own signal to abort a response: let it do its job.
			if err, ok := p.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(p)
			}
			log.Error("panic in http handler",
				zap.String("method", c.Request.Method),
				zap.String("route", c.FullPath()),
				zap.String("panic", panicType(p)),
				zap.ByteString("stack", debug.Stack()))
			if c.Writer.Written() {
				c.Abort()
				return
			}
			c.AbortWithStatusJSON(http.StatusInternalServerError, gin.H{"error": "internal"})
		}()
		c.Next()
	}
}

// panicType describes the panic without its text: a panic message can carry request data (a
// token in a formatted string), and the stack already locates the fault. Runtime errors (nil
// dereference, index out of range) are the exception: their text is fixed by the runtime.
func panicType(p any) string {
	if re, ok := p.(runtime.Error); ok {
		return re.Error()
	}
	return fmt.Sprintf("%T", p)
}

// requestLog writes one debug line per request: method, route pattern, status, size and
// duration. The query string and body are left out (tokens, payloads).
func requestLog(log *zap.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		if !log.Core().Enabled(zapcore.DebugLevel) {
			c.Next()
			return
		}
		start := time.Now()
		c.Next()
		log.Debug("http request",
			zap.String("method", c.Request.Method),
			zap.String("route", c.FullPath()),
			zap.String("path", c.Request.URL.Path),
			zap.Int("status", c.Writer.Status()),
			zap.Int("bytes", c.Writer.Size()),
			zap.Duration("duration", time.Since(start)))
	}
}
