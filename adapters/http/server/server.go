// Package server is the HTTP edge of the process: the gin engine with recovery and request
// logging, the operational endpoints (/healthz, /readyz, /metrics), and the routes the API
// packages register. It knows none of those packages: bootstrap hands it their Registrars.
package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"
)

// Registrar mounts one API package's routes (bootstrap wraps webhookapi.Register and
// managementapi.Register). Its error (a misconfigured API package) fails New, so a server never
// starts with part of its routes missing.
type Registrar func(gin.IRouter) error

// ReadinessCheck reports whether the process may receive traffic: nil when the database
// answers and no migration is pending. It must honour ctx's deadline.
type ReadinessCheck func(ctx context.Context) error

// Config of the HTTP server. Zero fields take the defaults of setDefaults.
type Config struct {
	Addr string
	// ReadHeaderTimeout bounds a client that opens a connection and sends headers slowly.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading the whole request; generous because a webhook body may be
	// 25 MiB on a slow link.
	ReadTimeout time.Duration
	// WriteTimeout bounds the handler and the response; above ReadTimeout, since it counts
	// from the end of the headers too.
	WriteTimeout time.Duration
	IdleTimeout  time.Duration
	// ReadyTimeout bounds one readiness check (the database ping and the migration status),
	// which runs in the background at most once a second.
	ReadyTimeout time.Duration
}

// Defaults.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 2 * time.Minute
	DefaultWriteTimeout      = 3 * time.Minute
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultReadyTimeout      = 2 * time.Second
)

func (c *Config) setDefaults() {
	if c.ReadHeaderTimeout == 0 {
		c.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.ReadyTimeout == 0 {
		c.ReadyTimeout = DefaultReadyTimeout
	}
}

func (c Config) validate() error {
	switch {
	case c.Addr == "":
		return errors.New("server: Addr is required")
	case c.ReadHeaderTimeout < 0 || c.ReadTimeout < 0 || c.WriteTimeout < 0 || c.IdleTimeout < 0 || c.ReadyTimeout < 0:
		return errors.New("server: timeouts must not be negative")
	}
	return nil
}

// Server owns the listener and the goroutine that serves it.
type Server struct {
	cfg    Config
	log    *zap.Logger
	engine *gin.Engine
	http   *http.Server
	ready  *readiness

	mu       sync.Mutex
	listener net.Listener
	served   chan struct{} // closed when Serve returned; nil until Start
	serveErr error         // Serve's error other than ErrServerClosed; set before served closes
}

// New builds the engine and its routes. ready and metrics are required; registrars add the
// API routes in the order given.
func New(cfg Config, log *zap.Logger, ready ReadinessCheck, metrics http.Handler, registrars ...Registrar) (*Server, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if log == nil || ready == nil || metrics == nil {
		return nil, errors.New("server: logger, readiness check and metrics handler are required")
	}
	readiness := newReadiness(ready, cfg.ReadyTimeout, log)
	engine, err := newEngine(log, readiness, metrics, registrars)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: log, engine: engine, ready: readiness}
	s.http = &http.Server{
		Addr:              cfg.Addr,
		Handler:           engine,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		ErrorLog:          zap.NewStdLog(log.Named("http")),
	}
	return s, nil
}

// Handler is the engine, for specs that drive it with httptest.
func (s *Server) Handler() http.Handler { return s.engine }

// Start listens on Addr (a busy port fails here, synchronously) and serves in a goroutine
// that Shutdown waits for.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.served != nil {
		return errors.New("server: already started")
	}
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.cfg.Addr, err)
	}
	s.listener = ln
	served := make(chan struct{})
	s.served = served
	go func() {
		defer close(served)
		if err := s.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.serveErr = err
		}
	}()
	s.log.Info("http server listening", zap.String("addr", ln.Addr().String()))
	return nil
}

// Addr is the address the server listens on (the real port when Addr asked for port 0).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener == nil {
		return ""
	}
	return s.listener.Addr().String()
}

// Done is closed when the server stopped serving; bootstrap selects on it to notice a server
// that died on its own. Err then says why. Before Start it is nil (blocks forever).
func (s *Server) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served
}

// Err is why the server stopped serving on its own, or nil; valid once Done is closed.
func (s *Server) Err() error {
	select {
	case <-s.Done():
		return s.serveErr
	default:
		return nil
	}
}

// Shutdown stops accepting connections at once (new requests are refused), waits for the
// requests in flight until ctx ends, then closes what is left and waits for the serving
// goroutine. It returns ctx's error when requests had to be cut off.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	served := s.served
	s.mu.Unlock()
	defer s.ready.wait()
	if served == nil {
		return nil
	}
	err := s.http.Shutdown(ctx)
	if err != nil {
		// Grace period over: cut the remaining connections so the goroutine can end.
		_ = s.http.Close()
	}
	<-served
	if err == nil {
		err = s.serveErr
	}
	return err
}

// Routes lists every route the engine registered (method and gin path), for the spec that
// holds the API document to them.
func (s *Server) Routes() gin.RoutesInfo { return s.engine.Routes() }
