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
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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

// ensureInitialized runs initdb unless pgdata already holds a cluster.
func (c *Cluster) ensureInitialized(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(c.pgData, "PG_VERSION")); err == nil {
		// Reuse. When root, re-own it in case an earlier run left files
		// with another owner (the server refuses a data dir it doesn't own).
		return c.run.chownTree(c.pgData)
	}

	// No PG_VERSION but files present means an initdb that was killed
	// halfway (initdb cleans up after its own failures). pgdata is ours
	// alone and holds no usable cluster, so start over.
	if entries, err := os.ReadDir(c.pgData); err == nil && len(entries) > 0 {
		c.logf("removing incomplete cluster in %s", c.pgData)
		if err := os.RemoveAll(c.pgData); err != nil {
			return fmt.Errorf("embedded postgres: remove incomplete cluster: %w", err)
		}
	}

	c.logf("initializing PostgreSQL cluster in %s", c.pgData)
	// Create it ourselves so that, as root, we can hand it to the server
	// user before initdb (running as that user) fills it. 0700 is what the
	// server demands of its data directory.
	if err := os.MkdirAll(c.pgData, 0o700); err != nil {
		return fmt.Errorf("embedded postgres: create %s: %w", c.pgData, err)
	}
	if err := c.run.chownTree(c.pgData); err != nil {
		return fmt.Errorf("embedded postgres: chown %s: %w", c.pgData, err)
	}

	// C.UTF-8 gives UTF-8 character semantics with byte-order collation
	// that does not depend on the machine's installed locales; plain C is
	// the fallback for systems without it.
	var outputs []string
	pwFile, removePW, err := c.initdbPasswordFile()
	if err != nil {
		return err
	}
	defer removePW()
	for _, locale := range []string{"C.UTF-8", "C"} {
		args := []string{"-D", c.pgData, "-U", superuser, "-A", "scram-sha-256", "--pwfile=" + pwFile,
			"-E", "UTF8", "--locale=" + locale}
		if !c.opts.Durable {
			args = append(args, "--no-sync")
		}
		out, err := c.run.command(ctx, "initdb", args...).CombinedOutput()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("embedded postgres: initdb: %w", ctx.Err())
		}
		outputs = append(outputs, fmt.Sprintf("with --locale=%s: %v\n%s", locale, err, strings.TrimSpace(string(out))))
		// initdb empties a pre-existing directory on failure, but make sure
		// the retry starts from an empty one.
		if err := clearDir(c.pgData); err != nil {
			return fmt.Errorf("embedded postgres: clean up after failed initdb: %w", err)
		}
	}
	return fmt.Errorf("embedded postgres: initdb failed in %s:\n%s", c.pgData, strings.Join(outputs, "\n"))
}

// prepareRuntimeFiles picks the socket directory and creates the log file,
// both owned by the server user when we are root.
func (c *Cluster) prepareRuntimeFiles() error {
	dir, owned, err := c.chooseSocketDir()
	if err != nil {
		return err
	}
	c.socketDir, c.ownsSocketDir = dir, owned
	if err := c.run.chownTree(c.socketDir); err != nil {
		return fmt.Errorf("embedded postgres: chown socket dir: %w", err)
	}
	if err := c.run.makeTraversable(filepath.Dir(c.socketDir)); err != nil {
		return err
	}

	// pg_ctl (as the server user) appends to the log; pre-create it so it
	// does not need write access to DataDir itself.
	f, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("embedded postgres: create log file: %w", err)
	}
	_ = f.Close()
	return c.run.chownTree(c.logPath)
}

// chooseSocketDir returns DataDir/run when a socket path inside it fits in
// a unix socket address, else a fresh short directory under the temp dir
// (or /tmp, if even TMPDIR is too long). owned reports the latter case.
func (c *Cluster) chooseSocketDir() (dir string, owned bool, err error) {
	fits := func(d string) bool { return len(d)+len(socketFileSuffix) <= maxSocketPath }

	local := filepath.Join(c.dataDir, socketSubdir)
	if fits(local) {
		// 0700: only the server's user (and root) reach the socket.
		if err := os.MkdirAll(local, 0o700); err != nil {
			return "", false, fmt.Errorf("embedded postgres: create socket dir: %w", err)
		}
		if err := os.Chmod(local, 0o700); err != nil {
			return "", false, fmt.Errorf("embedded postgres: socket dir mode: %w", err)
		}
		return local, false, nil
	}
	for _, base := range []string{os.TempDir(), "/tmp"} {
		// MkdirTemp appends up to 10 digits to the prefix.
		if !fits(filepath.Join(base, socketDirPrefix+"0123456789")) {
			continue
		}
		d, err := os.MkdirTemp(base, socketDirPrefix)
		if err != nil {
			return "", false, fmt.Errorf("embedded postgres: create socket dir: %w", err)
		}
		return d, true, nil
	}
	return "", false, fmt.Errorf("embedded postgres: no directory short enough for a unix socket "+
		"(DataDir %s and TMPDIR %s are both too long)", c.dataDir, os.TempDir())
}

// startServer runs pg_ctl start, retrying with another port when the port
// was picked by us and somebody else grabbed it in the meantime.
func (c *Cluster) startServer(ctx context.Context) error {
	pickPort := c.opts.Port == 0
	var lastErr error
	for attempt := 0; attempt < portAttempts; attempt++ {
		if pickPort {
			p, err := freePort()
			if err != nil {
				return fmt.Errorf("embedded postgres: pick a port: %w", err)
			}
			c.port = p
		}
		logStart := fileSize(c.logPath)
		c.logf("starting PostgreSQL on 127.0.0.1:%d (data %s)", c.port, c.pgData)
		out, err := c.run.command(ctx, "pg_ctl", "-D", c.pgData, "-w", "-t", strconv.Itoa(startTimeout),
			"-l", c.logPath, "-o", c.serverArgs(), "start").CombinedOutput()
		if err == nil {
			return nil
		}
		lastErr = c.failure("start PostgreSQL", out, err)

		// pg_ctl may have given up (timeout, cancellation) on a server that
		// is still coming up; do not leave it running.
		if pid, perr := c.serverPID(); perr == nil && pid.alive {
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout*time.Second)
			_, _ = c.run.command(stopCtx, "pg_ctl", "-D", c.pgData, "-m", "immediate", "-w", "stop").CombinedOutput()
			cancel()
			reapServer(pid.pid)
		}
		if ctx.Err() != nil || !pickPort || !portInUse(readFrom(c.logPath, logStart)) {
			return lastErr
		}
		c.logf("port %d was taken, retrying with another one", c.port)
	}
	return lastErr
}

// serverArgs is the -o value of pg_ctl. pg_ctl splices it into a /bin/sh
// command line, so every token is shell-quoted.
func (c *Cluster) serverArgs() string {
	args := []string{"-p", strconv.Itoa(c.port), "-k", c.socketDir, "-c", "listen_addresses=127.0.0.1"}
	if !c.opts.Durable {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	names := make([]string, 0, len(c.opts.Settings))
	for name := range c.opts.Settings {
		names = append(names, name)
	}
	sort.Strings(names) // deterministic command lines are easier to debug
	for _, name := range names {
		args = append(args, "-c", name+"="+c.opts.Settings[name])
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	return strings.Join(quoted, " ")
}

// ensureDatabase creates the hephaestus database if it does not exist.
func (c *Cluster) ensureDatabase(ctx context.Context) error {
	conn, err := connect(ctx, c.AdminURL())
	if err != nil {
		return c.failure("connect to PostgreSQL", nil, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))

	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", DatabaseName).Scan(&exists); err != nil {
		return fmt.Errorf("embedded postgres: look up database %s: %w", DatabaseName, err)
	}
	if exists {
		return nil
	}
	c.logf("creating database %s", DatabaseName)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{DatabaseName}.Sanitize())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // duplicate_database: a concurrent creator won
		return nil
	}
	if err != nil {
		return fmt.Errorf("embedded postgres: create database %s: %w", DatabaseName, err)
	}
	return nil
}

// connect retries briefly: pg_ctl -w returns once the server accepts
// connections, but a loaded CI machine can still refuse the very first one.
func connect(ctx context.Context, url string) (*pgx.Conn, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		attemptCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		conn, err := pgx.Connect(attemptCtx, url)
		cancel()
		if err == nil {
			return conn, nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// pidInfo is what postmaster.pid says, and whether its process lives.
type pidInfo struct {
	exists    bool
	alive     bool
	pid       int
	port      int
	socketDir string
}

// serverPID reads DataDir/pgdata/postmaster.pid. Its lines are: PID, data
// directory, start time, port, first socket directory, listen address,
// shared memory key, status.
func (c *Cluster) serverPID() (pidInfo, error) {
	data, err := os.ReadFile(filepath.Join(c.pgData, "postmaster.pid"))
	if errors.Is(err, os.ErrNotExist) {
		return pidInfo{}, nil
	}
	if err != nil {
		return pidInfo{}, fmt.Errorf("embedded postgres: read postmaster.pid: %w", err)
	}
	info := pidInfo{exists: true}
	lines := strings.Split(string(data), "\n")
	field := func(i int) string {
		if i < len(lines) {
			return strings.TrimSpace(lines[i])
		}
		return ""
	}
	info.pid, _ = strconv.Atoi(field(0))
	info.port, _ = strconv.Atoi(field(3))
	info.socketDir = field(4)
	info.alive = processAlive(info.pid)
	return info, nil
}

// reapServer collects the exited postmaster when it is our own child, which
// happens when this process is a subreaper (see AdoptServers), so that it
// does not linger as a zombie. pg_ctl -w returns once the server removed its
// pid file, a moment before the process itself is gone, hence the short
// poll. ECHILD means it is not ours to reap (init does it).
func reapServer(pid int) {
	if pid <= 0 {
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || got == pid || time.Now().After(deadline) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// failure formats an error for a failed command with its output and the
// end of the server log, which is where PostgreSQL explains itself.
func (c *Cluster) failure(what string, out []byte, err error) error {
	var b strings.Builder
	fmt.Fprintf(&b, "embedded postgres: %s: %v", what, err)
	if s := strings.TrimSpace(string(out)); s != "" {
		fmt.Fprintf(&b, "\n%s", s)
	}
	if tail := logTail(c.logPath, 30); tail != "" {
		fmt.Fprintf(&b, "\n--- last lines of %s ---\n%s", c.logPath, tail)
	}
	return errors.New(b.String())
}

func (c *Cluster) logf(format string, args ...any) {
	if c.opts.Log != nil {
		c.opts.Log(fmt.Sprintf(format, args...))
	}
}

// logTail returns up to n last lines of the file at path.
func logTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const maxTail = 16 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > maxTail {
		_, _ = f.Seek(fi.Size()-maxTail, io.SeekStart)
	}
	data, _ := io.ReadAll(f)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// readFrom returns the content of path from offset on.
func readFrom(path string, offset int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil
	}
	data, _ := io.ReadAll(f)
	return data
}

// portInUse tells from the server log whether the start failed because the
// TCP port was taken.
func portInUse(log []byte) bool {
	return bytes.Contains(log, []byte("Address already in use")) ||
		bytes.Contains(log, []byte("could not create any TCP/IP sockets"))
}

// freePort asks the kernel for an unused loopback port. Another process can
// take it before PostgreSQL binds it, hence the retry in startServer.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// clearDir removes everything inside dir but keeps dir (and its owner).
func clearDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// shellQuote wraps s in single quotes for /bin/sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}
