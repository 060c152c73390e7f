// Package embedded manages a local PostgreSQL cluster built from the server
// binaries installed on the machine (no download, no Docker).
//
// It backs the "embedded default database" of `hephaestus serve` when
// DATABASE_URL is unset, and the test harness (cmd/pgcluster). The cluster
// lives in a directory of the caller's choosing, listens on 127.0.0.1 only, and
// accepts only the process that started it: every connection proves a generated
// password kept in a 0600 file of that process's user (auth.go).
package pgembedded

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	// DatabaseName is the application database created on first start.
	DatabaseName = "hephaestus"
	// superuser is the bootstrap role initdb creates (-U). Its password is
	// generated into DataDir (PasswordFile) and required by scram-sha-256.
	superuser = "postgres"

	pgDataSubdir    = "pgdata"
	socketSubdir    = "run"
	logFileName     = "postgres.log"
	socketDirPrefix = "hephpg-" // prefix of socket dirs made under os.TempDir()

	// maxSocketPath is the longest usable unix socket path: sun_path is 108
	// bytes on Linux, including the terminating NUL.
	maxSocketPath = 107
	// socketFileSuffix is the longest name PostgreSQL puts in the socket
	// directory (".s.PGSQL.<port>"), with the separating slash.
	socketFileSuffix = "/.s.PGSQL.65535"

	// startTimeout bounds pg_ctl's own wait (-t); initdb and a cold start on
	// a slow CI disk take a few seconds, a minute means something is wrong.
	startTimeout = 60
	// portAttempts is how often Start retries with a fresh port when it
	// picked the port itself and lost a race for it to another process.
	portAttempts = 3
)

// ErrAlreadyRunning is returned by Start when a server already runs on the
// data directory. Use Attach to get a handle on it instead.
var ErrAlreadyRunning = errors.New("a PostgreSQL server is already running on this data directory")

// ErrNotRunning is returned by Attach when no server runs on the data directory.
var ErrNotRunning = errors.New("no PostgreSQL server is running on this data directory")

// Options configure Start and Attach.
type Options struct {
	// DataDir holds the cluster in DataDir/pgdata and the server log in
	// DataDir/postgres.log. Unix sockets go to DataDir/run when that path is
	// short enough for a socket address, else to a directory under
	// os.TempDir() that Stop removes.
	DataDir string
	// BinDir holds initdb, pg_ctl and postgres; empty means FindBinaries("").
	BinDir string
	// Port is the TCP port on 127.0.0.1; 0 picks a free one.
	Port int
	// Durable keeps PostgreSQL's crash-safety defaults. When false (tests)
	// fsync, synchronous_commit and full_page_writes are turned off and
	// initdb skips its fsync: much faster, but a machine crash can corrupt
	// the cluster, which is fine for throwaway data only.
	Durable bool
	// Settings are extra server settings passed as -c name=value, e.g.
	// {"max_connections": "300"}. They are applied last, so they override
	// the ones Durable implies.
	Settings map[string]string
	// Log, when set, receives progress messages (one line each, no newline).
	Log func(msg string)
}

// Cluster is a running (or stopped) local PostgreSQL server.
type Cluster struct {
	dataDir       string
	pgData        string
	logPath       string
	socketDir     string
	ownsSocketDir bool // socketDir is a temp dir of ours: Stop removes it
	port          int
	opts          Options
	run           *runner
	password      string // empty: a cluster of an older version that trusted local connections

	mu      sync.Mutex
	stopped bool
}

// Start initializes the cluster on first use, starts the server and creates
// the hephaestus database if it is missing. Later starts on the same DataDir
// reuse the existing data.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	c, err := prepare(opts, true)
	if err != nil {
		return nil, err
	}

	pid, err := c.serverPID()
	if err != nil {
		return nil, err
	}
	if pid.alive {
		return nil, fmt.Errorf("%w (pid %d, port %d, data %s)", ErrAlreadyRunning, pid.pid, pid.port, c.pgData)
	}
	if pid.exists {
		// Left behind by a server that crashed or whose machine was
		// restarted. PostgreSQL would refuse to start if the recorded PID
		// has since been reused by another process, so remove it.
		c.logf("removing stale %s (pid %d is gone)", filepath.Join(c.pgData, "postmaster.pid"), pid.pid)
		if err := os.Remove(filepath.Join(c.pgData, "postmaster.pid")); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("remove stale postmaster.pid: %w", err)
		}
	}

	if c.password, err = c.ensurePassword(); err != nil {
		return nil, err
	}
	if err := c.ensureInitialized(ctx); err != nil {
		return nil, err
	}
	if err := c.prepareRuntimeFiles(); err != nil {
		c.cleanupSocketDir()
		return nil, err
	}
	if err := c.startServer(ctx); err != nil {
		c.cleanupSocketDir()
		return nil, err
	}
	err = c.requirePassword(ctx)
	if err == nil {
		err = c.ensureDatabase(ctx)
	}
	if err != nil {
		// Do not leave a half-usable server behind; the caller got no handle
		// with which to stop it.
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*startTimeout*time.Second)
		defer cancel()
		_ = c.Stop(stopCtx)
		return nil, err
	}
	return c, nil
}

// Attach returns a handle on a server that is already running on
// opts.DataDir (started by an earlier Start, possibly in another process, as
// `pgcluster up` does). Port and socket directory are read from the server's
// postmaster.pid; opts.Port, Durable and Settings are ignored. It returns
// ErrNotRunning when no server is running there. Stop on the returned
// Cluster stops that server.
func Attach(opts Options) (*Cluster, error) {
	c, err := prepare(opts, false)
	if err != nil {
		return nil, err
	}
	pid, err := c.serverPID()
	if err != nil {
		return nil, err
	}
	if !pid.alive {
		return nil, fmt.Errorf("%w (%s)", ErrNotRunning, c.pgData)
	}
	c.port = pid.port
	c.socketDir = pid.socketDir
	if c.password, err = readPassword(filepath.Join(c.dataDir, PasswordFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	// A socket directory we created under the temp dir has to go when the
	// server stops, whichever process stops it.
	c.ownsSocketDir = c.socketDir != filepath.Join(c.dataDir, socketSubdir) &&
		strings.HasPrefix(filepath.Base(c.socketDir), socketDirPrefix)
	return c, nil
}

// prepare resolves paths and binaries and, when create is set, creates
// DataDir and makes it reachable for the server user. It starts nothing.
// Attach passes create=false: looking for a server must not create dirs.
func prepare(opts Options, create bool) (*Cluster, error) {
	if opts.DataDir == "" {
		return nil, errors.New("embedded postgres: Options.DataDir is required")
	}
	dataDir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return nil, fmt.Errorf("embedded postgres: data dir: %w", err)
	}
	binDir, err := FindBinaries(opts.BinDir)
	if err != nil {
		return nil, err
	}
	run, err := newRunner(binDir, dataDir)
	if err != nil {
		return nil, err
	}
	if create {
		if err := os.MkdirAll(dataDir, 0o755); err != nil {
			return nil, fmt.Errorf("embedded postgres: create data dir: %w", err)
		}
		if err := run.makeTraversable(dataDir); err != nil {
			return nil, err
		}
	}
	return &Cluster{
		dataDir: dataDir,
		pgData:  filepath.Join(dataDir, pgDataSubdir),
		logPath: filepath.Join(dataDir, logFileName),
		port:    opts.Port,
		opts:    opts,
		run:     run,
	}, nil
}

// URL is the connection string for the hephaestus database.
func (c *Cluster) URL() string { return c.url(DatabaseName) }

// AdminURL is the connection string for the postgres maintenance database,
// for callers that create and drop databases (e.g. one per test package).
func (c *Cluster) AdminURL() string { return c.url("postgres") }

func (c *Cluster) url(db string) string { return c.urlWithPassword(db, c.password) }

func (c *Cluster) urlWithPassword(db, password string) string {
	user := superuser
	if password != "" {
		user += ":" + password
	}
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", user, c.port, db)
}

// Port is the TCP port the server listens on (on 127.0.0.1).
func (c *Cluster) Port() int { return c.port }

// DataDir is the absolute directory given in Options.DataDir.
func (c *Cluster) DataDir() string { return c.dataDir }

// BinDir is the directory of the PostgreSQL binaries in use.
func (c *Cluster) BinDir() string { return c.run.binDir }

// LogPath is the server log file.
func (c *Cluster) LogPath() string { return c.logPath }

// Stop shuts the server down ("fast": open transactions are rolled back,
// clients disconnected) and waits until it has exited. Calling it again, or
// on a server that is already down, returns nil.
func (c *Cluster) Stop(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	pid, err := c.serverPID()
	if err != nil {
		return err
	}
	if pid.alive {
		c.logf("stopping PostgreSQL (pid %d)", pid.pid)
		out, err := c.run.command(ctx, "pg_ctl", "-D", c.pgData, "-m", "fast", "-w",
			"-t", strconv.Itoa(startTimeout), "stop").CombinedOutput()
		if err != nil {
			// pg_ctl also fails when the server went away between our
			// check and its own; that is the state we want anyway.
			if again, perr := c.serverPID(); perr != nil || again.alive {
				return c.failure("stop PostgreSQL", out, err)
			}
		}
		reapServer(pid.pid)
	}
	c.stopped = true
	c.cleanupSocketDir()
	return nil
}

func (c *Cluster) cleanupSocketDir() {
	if c.ownsSocketDir && c.socketDir != "" {
		_ = os.RemoveAll(c.socketDir)
	}
}
