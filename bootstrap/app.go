package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/hephaestus-dev/hephaestus/adapters/http/server"
	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
)

// HTTPShutdownGrace is the longest a stopping server lets webhook and API requests in flight
// finish after it stopped accepting new ones (less when HEPHAESTUS_SHUTDOWN_TIMEOUT is
// shorter). A 202 is sent only after a commit, so a request cut off here is simply redelivered
// by its provider.
const HTTPShutdownGrace = 10 * time.Second

// tracingShutdownGrace bounds the export of the spans still buffered when the server stops.
const tracingShutdownGrace = 5 * time.Second

// consumerStopBudget is the part of the whole stop (HEPHAESTUS_SHUTDOWN_TIMEOUT) the consumer
// may use, from the signal to its last lease released: four fifths, leaving the rest for
// closing the pools and stopping the embedded cluster.
func consumerStopBudget(total time.Duration) time.Duration { return total * 4 / 5 }

// Runner is a background component the App starts after the HTTP server and stops after it:
// the consumer (claimers, renewer, reaper, retention). Run returns when ctx is cancelled, after
// releasing what it holds; an error before that means the component failed.
type Runner interface {
	Run(ctx context.Context) error
}

// services is the object graph that needs the database, built by Wire (buildServices).
type services struct {
	registrars []server.Registrar
	runners    []Runner
}

// App is one server process: it owns the database, the HTTP server and the consumer, and
// the order in which they start and stop.
type App struct {
	cfg     Config
	log     *zap.Logger
	metrics *telemetry.Metrics
	build   func(ctx context.Context, in graphInput) (*services, func(), error)
	// console receives the one plain line that shows a generated admin token (stderr).
	console io.Writer
}

// newApp is the App provider; build is the Wire injector of the database-backed graph.
func newApp(cfg Config, log *zap.Logger, metrics *telemetry.Metrics) *App {
	return &App{cfg: cfg, log: log, metrics: metrics, build: buildServices, console: os.Stderr}
}

// Run serves until ctx is cancelled (SIGTERM, SIGINT), then stops: admitting (the HTTP server
// refuses new requests and finishes the ones in flight) and the consumer (it releases its
// unfinished leases without counting the attempt) stop in parallel, then the pool is closed and
// the embedded cluster stopped, all within HEPHAESTUS_SHUTDOWN_TIMEOUT. A cancellation is a clean stop: Run returns nil.
func (a *App) Run(ctx context.Context) (err error) {
	log := a.log
	log.Info("starting", zap.String("serverId", a.cfg.ServerID), zap.Bool("embeddedDatabase", a.cfg.Embedded()))

	// Tracing first and stopped last: the spans of the last outcome writes and requests are
	// exported before the process ends.
	tracing, err := telemetry.StartTracing(ctx, a.cfg.Tracing, a.cfg.TracingProtocol, a.cfg.SpanExporter)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), tracingShutdownGrace)
		defer cancel()
		if serr := tracing.Shutdown(sctx); serr != nil {
			log.Warn("spans not exported before the stop", zap.Error(serr))
		}
	}()
	if tracing.Enabled() {
		log.Info("tracing: exporting spans")
	}

	// With an external database a missing credentials key fails the start before any
	// connection is tried; in embedded mode the secrets are generated into the data dir only
	// once the cluster started (PostgreSQL binaries found, data dir locked).
	var secrets instanceSecrets
	if !a.cfg.Embedded() {
		if secrets, err = resolveSecrets(a.cfg, log, a.console); err != nil {
			return err
		}
	}
	waiting := newWaitingServer(a.cfg.HTTPAddr, log, a.metrics.Handler())
	db, err := openDatabase(ctx, a.cfg, log, waiting.notReady)
	if werr := waiting.stop(); werr != nil {
		log.Warn("the not-ready server did not stop cleanly", zap.Error(werr))
	}
	if err != nil {
		return startError(ctx, log, err)
	}
	defer func() {
		if cerr := db.close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		log.Info("stopped")
	}()
	if a.cfg.Embedded() {
		if secrets, err = resolveSecrets(a.cfg, log, a.console); err != nil {
			return err
		}
	}

	migrateLegacySecrets(ctx, db.pool, secrets, log)

	svc, cleanup, err := a.build(ctx, graphInput{Config: a.cfg, Secrets: secrets, Pool: db.pool,
		AdmissionPool: db.admission, LookupPool: db.lookup, ReadPool: db.reads, Log: log, Metrics: a.metrics})
	if err != nil {
		return fmt.Errorf("build services: %w", err)
	}
	defer cleanup()

	srv, err := server.New(server.Config{Addr: a.cfg.HTTPAddr}, log.Named("http"), db.ready, a.metrics.Handler(), svc.registrars...)
	if err != nil {
		return err
	}

	// The runners get their own context, cancelled by the stop below (not by a failure of the
	// start path's ctx alone), so Run decides when they stop.
	runCtx, stopRunners := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRunners()
	runnersDone := make(chan error, len(svc.runners))
	for _, r := range svc.runners {
		go func() { runnersDone <- r.Run(runCtx) }()
	}
	// waitRunners is the one place that waits for every runner goroutine.
	running := len(svc.runners)
	waitRunners := func() error {
		var errs []error
		for ; running > 0; running-- {
			if err := <-runnersDone; err != nil && !errors.Is(err, context.Canceled) {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}

	if err := srv.Start(); err != nil {
		stopRunners()
		return errors.Join(err, waitRunners())
	}
	log.Info("serving", zap.String("addr", srv.Addr()))

	var failure error
	select {
	case <-ctx.Done():
		log.Info("stopping: signal received")
	case <-srv.Done():
		failure = fmt.Errorf("http server stopped serving: %w", srv.Err())
	case err := <-runnersDone:
		running--
		if err == nil {
			err = errors.New("returned before it was stopped")
		}
		failure = fmt.Errorf("consumer stopped on its own: %w", err)
	}
	if failure != nil {
		log.Error("stopping after a failure", zap.Error(failure))
	}

	// Stop admitting and stop the consumer at once, in parallel: HTTP drains its requests in
	// flight while the consumer lets its running handlers finish, writes their outcomes and
	// releases the leases it still holds, both within HEPHAESTUS_SHUTDOWN_TIMEOUT (the
	// consumer within its StopBudget), so the orchestrator's kill never comes first and no
	// lease is left to expire. A delivery admitted while draining stays QUEUED for the next
	// claimer, on this server's next start or on another server.
	stopBudget := consumerStopBudget(a.cfg.ShutdownTimeout)
	httpStopped := make(chan struct{})
	go func() {
		defer close(httpStopped)
		shutdownCtx, cancel := context.WithTimeout(context.Background(), min(HTTPShutdownGrace, stopBudget))
		defer cancel()
		if err := srv.Shutdown(shutdownCtx); err != nil {
			log.Warn("http requests cut off after the grace period", zap.Error(err))
		} else {
			log.Info("http server stopped")
		}
	}()
	stopRunners()
	if err := waitRunners(); err != nil {
		failure = errors.Join(failure, err)
	}
	<-httpStopped
	// 3. The deferred calls close the pool and stop the embedded cluster.
	return failure
}

// startError turns a failure caused by a stop request during start into a clean stop.
// A start interrupted by SIGTERM fails in whatever way the interrupted step fails (pg_ctl
// killed, a dial cancelled), so any error after cancellation counts as the stop it caused.
func startError(ctx context.Context, log *zap.Logger, err error) error {
	if ctx.Err() != nil {
		log.Info("stopped during start", zap.Error(err))
		return nil
	}
	return err
}

// NewLogger builds the process logger from HEPHAESTUS_LOG_FORMAT and HEPHAESTUS_LOG_LEVEL.
func NewLogger(cfg Config) (*zap.Logger, error) {
	return telemetry.NewLogger(cfg.LogFormat, cfg.LogLevel)
}
