package bootstrap

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"go.uber.org/zap"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/admissionstore"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/internal/pgembedded"
)

const (
	// EmbeddedSubdir is where the embedded cluster lives inside HEPHAESTUS_DATA_DIR.
	EmbeddedSubdir = "postgres"
	// connectWait is how long a start waits for the database to answer: long enough for a
	// database container started next to the server, short enough to fail visibly.
	connectWait = 30 * time.Second
	// clusterStopTimeout bounds the embedded server's shutdown; pg_ctl gives up after 60 s.
	clusterStopTimeout = 2 * time.Minute
	// minPoolConns is the main pool's floor: management and readiness share it with the
	// claimers, renewer, reaper, outcome writer, retention and erasure.
	minPoolConns = 12
)

// PoolSize is the main pool's MaxConns: every claimer may hold a connection while its
// handler writes steps, and the renewer, reaper, outcome writer, retention and the management
// API need their own. Webhook admission has a pool of its own (admissionstore.Size()
// connections, see admissionPool), so a burst of deliveries never waits for connections the
// claimers hold, nor the claimers for the receiver's.
func PoolSize(claimers int) int32 { return int32(max(minPoolConns, 2*claimers+4)) }

// ConfigureMainPool makes every session of the main pool start at READ COMMITTED, whatever
// the server's, database's or role's default_transaction_isolation: the claim's scope checks
// must read the statement snapshot and its SKIP LOCKED must pass over rows other claimers
// lock, and the outcome, renewal, reaper and retention statements rely on reading the newest
// committed row. Under REPEATABLE READ or SERIALIZABLE concurrent claimers would fail with
// serialization errors instead. A startup parameter costs nothing per statement (the
// admission pool sets it the same way, admissionstore.Configure).
func ConfigureMainPool(cfg *pgxpool.Config) {
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	cfg.ConnConfig.RuntimeParams["default_transaction_isolation"] = "read committed"
}

// DefaultConnectTimeout bounds each host's connection attempt when DATABASE_URL sets no
// connect_timeout. Without it a host that vanished without a reset (a lost machine, a dropped
// route) holds a new connection until the caller's deadline, so the next host of a multi-host
// URL is never tried; PostgreSQL itself answers a loopback or LAN connect in milliseconds.
const DefaultConnectTimeout = 5 * time.Second

// ConfigureFailover prepares every pool for losing the database host
// (docs/operations/database-failover.md): a session whose node stopped accepting writes closes
// itself (sqlkit.CloseOnReadOnly), so the next connection asks the URL's hosts for a
// read-write one again, and a connection attempt to a silent host gives up after
// DefaultConnectTimeout unless the URL chose its own connect_timeout. Connections that die with
// the host are noticed by the pool on their next use (pgxpool pings a connection idle for more
// than a second before handing it out) and by the store calls' own deadlines.
func ConfigureFailover(cfg *pgxpool.Config) {
	sqlkit.CloseOnReadOnly(&cfg.ConnConfig.Config)
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
}

// dbServer is the PostgreSQL server the process talks to: an external one (DATABASE_URL) or
// the embedded cluster under the data dir.
type dbServer struct {
	url     string
	cluster *pgembedded.Cluster // nil for an external server
	stop    bool                // stop the cluster on close (we started or adopted it)
	unlock  func()              // releases the data dir lock; nil for an external server
	log     *zap.Logger
}

// startServer returns the database to use: DATABASE_URL, or the embedded cluster, started on
// first use. exclusive (serve) refuses a data dir another process of ours uses; migrate shares
// a running cluster with the serve that runs it, and leaves it running.
func startServer(ctx context.Context, cfg Config, log *zap.Logger, exclusive bool) (*dbServer, error) {
	if !cfg.Embedded() {
		return &dbServer{url: cfg.DatabaseURL, log: log}, nil
	}
	// Look for the binaries first: without them the embedded package's one-paragraph
	// message (install postgresql or set DATABASE_URL) is the whole answer.
	binDir, err := pgembedded.FindBinaries("")
	if err != nil {
		return nil, err
	}
	unlock, held, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	if !held && exclusive {
		return nil, fmt.Errorf("another hephaestus process uses the data dir %s (its lock file %s is held); "+
			"stop it, or give this one its own %s", cfg.DataDir, filepath.Join(cfg.DataDir, lockFile), EnvDataDir)
	}
	log = log.With(zap.String("component", "embedded-postgres"))
	opts := pgembedded.Options{
		DataDir: filepath.Join(cfg.DataDir, EmbeddedSubdir),
		BinDir:  binDir,
		Durable: true, // the default database keeps real data between runs
		Log:     func(msg string) { log.Info(msg) },
	}
	s := &dbServer{log: log, unlock: unlock}
	if !held {
		// A serve of ours runs the cluster: use it and leave it to that serve.
		c, err := pgembedded.Attach(opts)
		if err != nil {
			return nil, fmt.Errorf("use the embedded PostgreSQL of the running server: %w", err)
		}
		s.cluster, s.url = c, c.URL()
		return s, nil
	}
	c, err := pgembedded.Start(ctx, opts)
	if errors.Is(err, pgembedded.ErrAlreadyRunning) {
		// We hold the data dir lock, so no process of ours owns this server: it was left
		// running by a run that was killed. Adopt it, and stop it when we stop.
		log.Warn("adopting a PostgreSQL server left running by an earlier run", zap.Error(err))
		c, err = pgembedded.Attach(opts)
	}
	if err != nil {
		unlock()
		return nil, err
	}
	s.cluster, s.url, s.stop = c, c.URL(), true
	return s, nil
}

// close stops the embedded cluster if this process runs it, then releases the data dir.
func (s *dbServer) close() error {
	var err error
	if s.cluster != nil && s.stop {
		ctx, cancel := context.WithTimeout(context.Background(), clusterStopTimeout)
		err = s.cluster.Stop(ctx)
		cancel()
		if err != nil {
			err = fmt.Errorf("stop embedded PostgreSQL: %w", err)
		}
	}
	if s.unlock != nil {
		s.unlock()
	}
	return err
}

// database is the migrated database with the process's pools.
type database struct {
	server    *dbServer
	pool      *pgxpool.Pool
	admission admissionPool
	lookup    lookupPool
	reads     operatorReadPool
	sqlDB     *sql.DB // database/sql over the pool, for goose's migration status
}

// admissionPool is the admission store's own pool, prepared by admissionstore.Configure (its
// sessions default to READ COMMITTED and generic plans, which admission's pipelined
// transactions rely on and nothing else should inherit).
type admissionPool struct{ *pgxpool.Pool }

// lookupPool serves the connection lookups of unauthenticated webhook requests (see
// provideSourceDirectory): LookupPoolSize connections, a bulkhead in front of the main pool.
type lookupPool struct{ *pgxpool.Pool }

// operatorReadPool serves the operators' reads of the inbox (the deliveries browser, dead-letter
// lists, rejections, inbox counts; the API's and the console's): HEPHAESTUS_OPERATOR_READ_CONNECTIONS
// connections whose statements end after HEPHAESTUS_OPERATOR_READ_TIMEOUT (ConfigureOperatorReads).
// However many such reads callers send, they wait for these connections, never for the
// claimers', the management API's or admission's.
type operatorReadPool struct{ *pgxpool.Pool }

// ConfigureOperatorReads sizes an operator read pool and bounds its statements: a session
// starts with statement_timeout (PostgreSQL cancels a statement past it, SQLSTATE 57014, which
// the stores report as transient: 503 retry) and READ COMMITTED as the main pool's (the reads
// that want one snapshot ask for REPEATABLE READ themselves).
func ConfigureOperatorReads(cfg *pgxpool.Config, conns int, timeout time.Duration) {
	ConfigureMainPool(cfg)
	cfg.MaxConns, cfg.MinConns = int32(conns), 0
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(max(timeout.Milliseconds(), 1), 10)
}

// LookupPoolSize bounds the connections unauthenticated webhook lookups use at once. A lookup
// is one primary-key read (well under a millisecond), so two answer thousands per second; past
// that, requests wait for them within their own deadline.
const LookupPoolSize = 2

// openDatabase starts or finds the server, opens the pool, waits for the database to answer
// and applies the migrations it lacks.
//
// waiting, when not nil, hears each failed attempt while a multi-host DATABASE_URL has no host
// that accepts writes (App.Run answers "not ready" meanwhile); such a start waits until one does
// or ctx ends, instead of giving up after connectWait.
func openDatabase(ctx context.Context, cfg Config, log *zap.Logger, waiting func(error)) (_ *database, err error) {
	srv, err := startServer(ctx, cfg, log, true)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, srv.close())
		}
	}()
	pcfg, err := pgxpool.ParseConfig(srv.url)
	if err != nil {
		return nil, fmt.Errorf("parse database URL: %w", err)
	}
	ConfigureFailover(pcfg)
	acfg := pcfg.Copy()
	lcfg := pcfg.Copy()
	rcfg := pcfg.Copy()
	pcfg.MaxConns = PoolSize(cfg.Consumer.Claimers)
	ConfigureMainPool(pcfg)
	// Shown in pg_stat_activity, so a DBA sees which server holds which connection.
	pcfg.ConnConfig.RuntimeParams["application_name"] = "hephaestus " + cfg.ServerID
	admissionstore.Configure(acfg)
	admissionstore.SetLockTimeout(acfg, cfg.AdmissionLockTimeout)
	acfg.ConnConfig.RuntimeParams["application_name"] = "hephaestus " + cfg.ServerID + " admission"
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("open database pool: %w", err)
	}
	if err := waitForDatabase(ctx, pool, log, waiting); err != nil {
		pool.Close()
		return nil, err
	}
	applied, err := postgres.Migrate(ctx, srv.url)
	if err != nil {
		pool.Close()
		return nil, err
	}
	admission, err := pgxpool.NewWithConfig(ctx, acfg)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("open admission pool: %w", err)
	}
	lcfg.MaxConns, lcfg.MinConns = LookupPoolSize, 0
	lcfg.ConnConfig.RuntimeParams["application_name"] = "hephaestus " + cfg.ServerID + " webhook lookups"
	lookup, err := pgxpool.NewWithConfig(ctx, lcfg)
	if err != nil {
		admission.Close()
		pool.Close()
		return nil, fmt.Errorf("open webhook lookup pool: %w", err)
	}
	ConfigureOperatorReads(rcfg, cfg.OperatorReadConnections, cfg.OperatorReadTimeout)
	rcfg.ConnConfig.RuntimeParams["application_name"] = OperatorReadsApplicationName(cfg.ServerID)
	reads, err := pgxpool.NewWithConfig(ctx, rcfg)
	if err != nil {
		lookup.Close()
		admission.Close()
		pool.Close()
		return nil, fmt.Errorf("open operator read pool: %w", err)
	}
	log.Info("database migrated", zap.Int("applied", applied), zap.Int32("maxConns", pcfg.MaxConns),
		zap.Int32("admissionMaxConns", acfg.MaxConns))
	return &database{server: srv, pool: pool, admission: admissionPool{admission}, lookup: lookupPool{lookup},
		reads: operatorReadPool{reads}, sqlDB: stdlib.OpenDBFromPool(pool)}, nil
}

// OperatorReadsApplicationName is the application_name of the operator read pool's sessions, so
// pg_stat_activity (and a DBA) tells them from the claimers' and admission's.
func OperatorReadsApplicationName(serverID string) string {
	return "hephaestus " + serverID + " operator reads"
}

// waitForDatabase pings until the database answers or connectWait passes. With a multi-host
// URL (a high-availability formation) it waits until a host accepts a read-write session or ctx
// ends, however long a failover takes, logging the hosts it tried (pgconn's error names each
// host and why it was refused) and telling waiting.
func waitForDatabase(ctx context.Context, pool *pgxpool.Pool, log *zap.Logger, waiting func(error)) error {
	hosts := databaseHosts(&pool.Config().ConnConfig.Config)
	multiHost := len(hosts) > 1
	if !multiHost {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, connectWait)
		defer cancel()
	}
	delay := 100 * time.Millisecond
	for {
		err := pool.Ping(ctx)
		if err == nil {
			return nil
		}
		if multiHost {
			log.Warn("no database host accepts writes yet; waiting for one", zap.Strings("hosts", hosts), zap.Error(err))
			if waiting != nil {
				waiting(err)
			}
		} else {
			log.Warn("database not answering yet", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			if multiHost {
				return fmt.Errorf("no database host (%s) accepted writes: %w", strings.Join(hosts, ", "), err)
			}
			return fmt.Errorf("database did not answer within %s: %w", connectWait, err)
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}

// ready is /readyz's check: the database answers, accepts writes (a demoted primary that
// still answers does not) and no embedded migration is pending.
func (d *database) ready(ctx context.Context) error {
	var readOnly bool
	if err := d.pool.QueryRow(ctx, `SELECT current_setting('transaction_read_only')::bool`).Scan(&readOnly); err != nil {
		return fmt.Errorf("database ping: %w", err)
	}
	if readOnly {
		return errors.New("the database host accepts no writes (a standby, or a primary being demoted)")
	}
	n, err := postgres.Pending(ctx, d.sqlDB)
	if err != nil {
		return fmt.Errorf("migration status: %w", err)
	}
	if n > 0 {
		return fmt.Errorf("%d migrations pending", n)
	}
	return nil
}

// close closes the pools, then stops the embedded cluster (if ours).
func (d *database) close() error {
	err := d.sqlDB.Close()
	if d.admission.Pool != nil {
		d.admission.Close()
	}
	if d.lookup.Pool != nil {
		d.lookup.Close()
	}
	if d.reads.Pool != nil {
		d.reads.Close()
	}
	d.pool.Close()
	return errors.Join(err, d.server.close())
}

// Migrate applies the embedded migrations to DATABASE_URL or the embedded default database
// and stops what it started (`hephaestus migrate`).
func Migrate(ctx context.Context, cfg Config, log *zap.Logger) (applied int, err error) {
	srv, err := startServer(ctx, cfg, log, false)
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, srv.close()) }()
	return postgres.Migrate(ctx, srv.url)
}
