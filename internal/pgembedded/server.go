package pgembedded

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

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
