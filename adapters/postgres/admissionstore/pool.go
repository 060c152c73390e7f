package admissionstore

// Why this file: admission's transactions take their isolation and planning from the
// session (an implicit transaction has no BEGIN to say them), so the pool that serves them
// is configured here, and only here, and sized for the lock they all share.

import (
	"context"
	"runtime"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The session settings every admission connection starts with (see Configure).
const (
	isolationParam = "default_transaction_isolation"
	isolation      = "read committed"
	planCacheParam = "plan_cache_mode"
	planCache      = "force_generic_plan"
	// lockTimeoutParam ends a wait for a lifecycle lock (a workspace deletion or a suspension
	// holding a connection row): the statement fails with 55P03, which is contention
	// (sqlkit.Interpret), so the delivery is answered 503 retry and the provider delivers it
	// again, instead of every provider's admission stalling behind one long transaction.
	lockTimeoutParam = "lock_timeout"
)

// DefaultLockTimeout is HEPHAESTUS_ADMISSION_LOCK_TIMEOUT's default.
const DefaultLockTimeout = 2 * time.Second

// SetLockTimeout sets the longest an admission statement waits for a row lock on a pool that
// Configure prepared (a startup parameter: no statement per delivery). d is rounded up to a
// millisecond; it must be positive.
func SetLockTimeout(cfg *pgxpool.Config, d time.Duration) {
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	ms := (d + time.Millisecond - 1) / time.Millisecond
	cfg.ConnConfig.RuntimeParams[lockTimeoutParam] = strconv.FormatInt(int64(max(ms, 1)), 10)
}

// Configure prepares cfg for a pool that serves admission alone, and Size is its MaxConns.
//
// An admission transaction opens no transaction block: its statements run in one pipeline
// until a Sync (see Admit), so PostgreSQL runs them as one implicit transaction with the
// session's default isolation, which Configure pins to READ COMMITTED whatever the server,
// database or role default. The lifecycle lock needs it: each statement sees what committed
// before it, and a row lock that waited returns the row as its updater committed it, so a
// suspension or reconfiguration that admission waited for is seen, not hidden by an older
// snapshot (and REPEATABLE READ would fail the wait instead).
//
// Configure also keeps the pool's statements on their generic plans. Admission's statements
// are index lookups whose generic plan is right for every delivery, but PostgreSQL re-plans a
// prepared statement on every execution while custom plans look cheaper, and for the routes
// statement they do whenever the planner can fold a parameter (a provider that routes only
// through its sources, or a table whose statistics favour it): that planning costs more than
// the statement. Both are startup parameters, so they cost no statement per delivery, which
// is why admission has a pool of its own rather than settings on a shared one. Its sessions
// also wait at most DefaultLockTimeout for a row lock unless SetLockTimeout chose another.
func Configure(cfg *pgxpool.Config) {
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	cfg.ConnConfig.RuntimeParams[isolationParam] = isolation
	cfg.ConnConfig.RuntimeParams[planCacheParam] = planCache
	if cfg.ConnConfig.RuntimeParams[lockTimeoutParam] == "" {
		SetLockTimeout(cfg, DefaultLockTimeout)
	}
	cfg.MaxConns = Size()
	cfg.MinConns = 0
}

// OpenPool opens a pool on connString prepared by Configure.
func OpenPool(ctx context.Context, connString string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, err
	}
	Configure(cfg)
	return pgxpool.NewWithConfig(ctx, cfg)
}

// Size is how many admission transactions run at once, and the admission pool's size: four
// per CPU the process may use.
//
// Every admission of a connection holds that connection row FOR SHARE until its insert has
// committed, so concurrent admissions share the row through a MultiXact that each new locker
// rebuilds with every current one; the database's work per delivery grows with the number of
// transactions in flight, and past a few per core more of them only queue inside PostgreSQL,
// where waiting costs CPU that queueing here does not (docs/operations/performance.md has the
// measurement behind four).
func Size() int32 { return int32(4 * runtime.GOMAXPROCS(0)) }
