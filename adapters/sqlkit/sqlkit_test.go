package sqlkit_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
)

// The failover's errors are the ones pgx really returns: each case below makes the test
// cluster (or a proxy in front of it) fail the way a lost primary does, and checks that the
// error is a connection error and that Interpret classes it as a database transport failure
// (*inbox.TransientError without Conflict: bounded delay, no budget).

func adminURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv(pgtest.EnvAdminURL)
	if u == "" {
		t.Skip(pgtest.ErrNoCluster.Error())
	}
	return u
}

func connect(t *testing.T, ctx context.Context, connString string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, connString)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// expectTransport asserts err is a transport failure for both the predicate and Interpret.
func expectTransport(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	if !sqlkit.IsConnectionError(err) {
		t.Errorf("%s: IsConnectionError(%T %v) = false, want true", what, err, err)
	}
	var transient *inbox.TransientError
	if got := sqlkit.Interpret("op", err); !errors.As(got, &transient) || transient.Conflict {
		t.Errorf("%s: Interpret(%v) = %v, want a database transport failure", what, err, got)
	}
	if !errors.Is(sqlkit.Interpret("op", err), err) {
		t.Errorf("%s: Interpret dropped the original error from the chain", what)
	}
}

// waitActive waits until a backend of the test cluster runs query (so a failure injected now
// hits the statement in flight, not the idle session).
func waitActive(t *testing.T, ctx context.Context, admin *pgx.Conn, query string) int32 {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var pid int32
		err := admin.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE query = $1 AND state = 'active'`, query).Scan(&pid)
		if err == nil {
			return pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no backend runs %q", query)
	return 0
}

func TestAnAdminShutdownMidStatementAndTheClosedConnectionAfterItAreTransportFailures(t *testing.T) {
	ctx := context.Background()
	u := adminURL(t)
	admin := connect(t, ctx, u)
	victim := connect(t, ctx, u)
	const sleep = "SELECT pg_sleep(30) /* terminated */"
	errc := make(chan error, 1)
	go func() { _, err := victim.Exec(ctx, sleep); errc <- err }()
	pid := waitActive(t, ctx, admin, sleep)
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	err := <-errc
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != sqlkit.AdminShutdown {
		t.Fatalf("terminated statement: got %v, want SQLSTATE 57P01", err)
	}
	expectTransport(t, "admin shutdown (57P01)", err)
	_, err = victim.Exec(ctx, "SELECT 1")
	if !errors.Is(err, pgconn.ErrConnClosed) {
		t.Fatalf("after the shutdown: got %v, want conn closed", err)
	}
	expectTransport(t, "closed connection", err)
}

// proxy forwards one client at a time to the cluster and can cut the client off.
type proxy struct {
	ln       net.Listener
	mu       sync.Mutex
	client   net.Conn
	truncate atomic.Bool // forward only the first bytes of the server's next answer, then close
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.client = c
			p.mu.Unlock()
			go func() { _, _ = io.Copy(s, c); _ = s.Close() }()
			go func() {
				defer func() { _ = c.Close() }()
				buf := make([]byte, 32<<10)
				for {
					n, err := s.Read(buf)
					if n > 0 && p.truncate.Load() {
						_, _ = c.Write(buf[:min(n, 8)])
						return
					}
					if n > 0 {
						if _, err := c.Write(buf[:n]); err != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return p
}

// cut ends the client's socket: with a reset (what a vanished host's kernel answers) or, with
// reset false, with an orderly close in the middle of the conversation (what a SIGKILLed
// postmaster's sockets do on loopback).
func (p *proxy) cut(t *testing.T, reset bool) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if reset {
		if err := p.client.(*net.TCPConn).SetLinger(0); err != nil {
			t.Fatal(err)
		}
	}
	_ = p.client.Close()
}

func viaProxy(t *testing.T, u string, p *proxy) string {
	t.Helper()
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	parsed.Host = p.ln.Addr().String()
	return parsed.String()
}

func TestAServerThatVanishesMidStatementIsATransportFailure(t *testing.T) {
	ctx := context.Background()
	u := adminURL(t)
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	admin := connect(t, ctx, u)
	for _, c := range []struct {
		name  string
		reset bool
	}{{"closed mid-statement", false}, {"reset mid-statement", true}} {
		t.Run(c.name, func(t *testing.T) {
			p := startProxy(t, parsed.Host)
			conn := connect(t, ctx, viaProxy(t, u, p))
			sleep := "SELECT pg_sleep(30) /* " + c.name + " */"
			errc := make(chan error, 1)
			go func() { _, err := conn.Exec(ctx, sleep); errc <- err }()
			pid := waitActive(t, ctx, admin, sleep)
			t.Cleanup(func() { _, _ = admin.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid) })
			p.cut(t, c.reset)
			expectTransport(t, c.name, <-errc)
		})
	}
	// The server's answer ends in the middle of a message: pgx returns io.ErrUnexpectedEOF,
	// which nothing but the predicate's own check recognises (no net.Error, no pgconn type).
	t.Run("cut in the middle of an answer", func(t *testing.T) {
		p := startProxy(t, parsed.Host)
		conn := connect(t, ctx, viaProxy(t, u, p))
		p.truncate.Store(true)
		var s string
		err := conn.QueryRow(ctx, "SELECT repeat('x', 100000)").Scan(&s)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("got %v, want an error wrapping io.ErrUnexpectedEOF", err)
		}
		var netErr net.Error
		if errors.As(err, &netErr) || pgconn.SafeToRetry(err) {
			t.Fatalf("%v is a net.Error or safe to retry: the EOF check is not what recognises it", err)
		}
		expectTransport(t, "unexpected EOF", err)
	})
}

func TestAWriteOnANodeThatBecameReadOnlyIsATransportFailureAndClosesTheConnection(t *testing.T) {
	ctx := context.Background()
	u := adminURL(t)
	cfg, err := pgx.ParseConfig(u)
	if err != nil {
		t.Fatal(err)
	}
	sqlkit.CloseOnReadOnly(&cfg.Config)
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	// What pg_auto_failover does to a primary it drains before demoting it.
	if _, err := conn.Exec(ctx, "SET default_transaction_read_only = on"); err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, "CREATE TABLE hx_pgutil_read_only (id int)")
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != sqlkit.ReadOnlyTransaction {
		t.Fatalf("got %v, want SQLSTATE 25006", err)
	}
	expectTransport(t, "read-only transaction (25006)", err)
	if !conn.IsClosed() {
		t.Fatal("the connection to a read-only node stayed open: the pool would keep it")
	}

	// Without CloseOnReadOnly the session stays (pgx closes only on FATAL).
	plain := connect(t, ctx, u)
	if _, err := plain.Exec(ctx, "SET default_transaction_read_only = on"); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Exec(ctx, "CREATE TABLE hx_pgutil_read_only (id int)"); err == nil {
		t.Fatal("a read-only session created a table")
	}
	if plain.IsClosed() {
		t.Fatal("a plain connection closed on a statement error")
	}
	// Other statement errors keep the connection, with CloseOnReadOnly too.
	keep, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = keep.Close(context.Background()) })
	if _, err := keep.Exec(ctx, "SELEC 1"); err == nil || sqlkit.IsConnectionError(err) {
		t.Fatalf("a syntax error: got %v, want a statement error that is no connection error", err)
	}
	if keep.IsClosed() {
		t.Fatal("a syntax error closed the connection")
	}
}

func TestNoHostAcceptingWritesAndARefusedConnectionAreTransportFailures(t *testing.T) {
	ctx := context.Background()
	u := adminURL(t)
	// A multi-host URL whose only live host is read-only: pgx tries each host and refuses the
	// read-only session (the standby of a formation whose primary is gone).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	_ = ln.Close()
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	parsed.Host = closed + "," + parsed.Host
	q := parsed.Query()
	q.Set("target_session_attrs", "read-write")
	q.Set("options", "-c default_transaction_read_only=on")
	parsed.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20")
	_, err = pgx.Connect(ctx, parsed.String())
	if !errors.Is(err, pgconn.ErrReadOnlyConnection) {
		t.Fatalf("got %v, want a refused read-only session", err)
	}
	expectTransport(t, "no host accepts writes", err)

	parsed.Host = closed
	_, err = pgx.Connect(ctx, parsed.String())
	expectTransport(t, "connection refused", err)
}

func TestATimedOutStatementIsATransportFailureForThePredicate(t *testing.T) {
	ctx := context.Background()
	conn := connect(t, ctx, adminURL(t))
	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err := conn.Exec(tctx, "SELECT pg_sleep(10)")
	if !sqlkit.IsConnectionError(err) {
		t.Fatalf("IsConnectionError(%v) = false for a statement cut off by its deadline", err)
	}
	// Interpret leaves the caller's own deadline to the caller (the loops back off on it).
	if got := sqlkit.Interpret("op", err); !errors.Is(got, context.DeadlineExceeded) {
		t.Fatalf("Interpret(%v) = %v, want the deadline unchanged", err, got)
	}
}

func TestTheServersShutdownCodesAreTransportFailuresAndStatementErrorsAreNot(t *testing.T) {
	for _, code := range []string{sqlkit.AdminShutdown, sqlkit.CrashShutdown, sqlkit.CannotConnectNow,
		sqlkit.ReadOnlyTransaction, "08006", "08001"} {
		expectTransport(t, code, &pgconn.PgError{Severity: "FATAL", Code: code})
	}
	for _, code := range []string{"42601", sqlkit.UniqueViolation, "22P02", "25P02"} {
		if sqlkit.IsConnectionError(&pgconn.PgError{Severity: "ERROR", Code: code}) {
			t.Errorf("IsConnectionError(%s) = true, want false", code)
		}
	}
	if sqlkit.IsConnectionError(errors.New("something else")) || sqlkit.IsConnectionError(nil) {
		t.Error("IsConnectionError is true for an error that is no connection failure")
	}
}
