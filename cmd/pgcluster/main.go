// Command pgcluster runs throwaway or long-lived local PostgreSQL clusters
// for development and tests, using package embedded.
//
//	pgcluster run [-durable] [-keep] -- CMD ARGS...
//	    Start a cluster in a fresh temp dir, run CMD with
//	    HEPHAESTUS_TEST_DATABASE_URL (admin URL) and HEPHAESTUS_TEST_PG_BIN
//	    set, then stop the cluster, delete the dir and exit with CMD's code.
//	pgcluster up -dir DIR [-port N]
//	    Start (or reuse) a cluster in DIR, print its admin URL, leave it running.
//	pgcluster ha -dir DIR [-default-timings]
//	    Start a pg_auto_failover formation in DIR (a monitor, a primary and a
//	    synchronous standby on 127.0.0.1), print its multi-host DATABASE_URL,
//	    leave it running.
//	pgcluster down -dir DIR
//	    Stop the cluster or the formation in DIR.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hephaestus-dev/hephaestus/internal/pgembedded"
)

const (
	envDatabaseURL = "HEPHAESTUS_TEST_DATABASE_URL"
	envPGBin       = "HEPHAESTUS_TEST_PG_BIN"

	// defaultMaxConnections leaves room for several test packages, each
	// with its own pool, running in parallel against one cluster.
	defaultMaxConnections = 300

	// stopTimeout bounds the shutdown; pg_ctl itself gives up after 60s.
	stopTimeout = 2 * time.Minute
)

const usage = `usage:
  pgcluster run [-durable] [-keep] [-max-connections N] [-set NAME=VALUE]... [-bin DIR] -- CMD [ARGS...]
      Start a throwaway PostgreSQL cluster in a fresh temp dir, run CMD with
      ` + envDatabaseURL + ` (admin URL) and ` + envPGBin + ` set,
      then stop the cluster and remove the dir. Exits with CMD's exit code.
  pgcluster up -dir DIR [-port N] [-durable] [-max-connections N] [-set NAME=VALUE]... [-bin DIR]
      Start (or reuse) the cluster in DIR, print its admin URL on stdout and
      leave it running. -port 0 (the default) picks a free port.
  pgcluster ha -dir DIR [-default-timings] [-bin DIR]
      Start a pg_auto_failover formation in DIR: a monitor, a primary and a
      synchronous standby on 127.0.0.1, from Debian's postgresql-15-auto-failover
      and pg-auto-failover-cli. Print its multi-host DATABASE_URL
      (target_session_attrs=read-write) on stdout and leave it running. The
      monitor's timings fail over in about 10-15 s; -default-timings keeps
      pg_auto_failover's own (about 52 s). docs/operations/database-failover.md.
  pgcluster down -dir DIR
      Stop the cluster or the formation in DIR.
`

func main() {
	os.Exit(realMain(os.Args[1:]))
}

func realMain(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return cmdRun(args[1:])
	case "up":
		return cmdUp(args[1:])
	case "ha":
		return cmdHA(args[1:])
	case "down":
		return cmdDown(args[1:])
	case "help", "-h", "-help", "--help":
		fmt.Print(usage)
		return 0
	default:
		fmt.Fprintf(os.Stderr, "pgcluster: unknown command %q\n%s", args[0], usage)
		return 2
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pgcluster: "+format+"\n", args...)
}

func progress(msg string) { logf("%s", msg) }

func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("pgcluster "+name, flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, usage) }
	return fs
}

// cmdRun implements `pgcluster run`. Whatever happens after the temp dir is
// created (CMD failing, CMD not found, SIGINT/SIGTERM), the cluster is
// stopped and the dir removed before exiting.
func cmdRun(args []string) int {
	fs := newFlagSet("run")
	durable := fs.Bool("durable", false, "keep PostgreSQL's crash-safety defaults (for benchmarks)")
	keep := fs.Bool("keep", false, "keep the temp dir (data and server log) after the run")
	maxConns := fs.Int("max-connections", defaultMaxConnections, "server max_connections")
	settings := serverSettings{}
	fs.Var(settings, "set", "a server setting NAME=VALUE (repeatable), e.g. shared_preload_libraries=pg_stat_statements")
	binDir := fs.String("bin", "", "PostgreSQL bin dir (default: discovered)")
	// flag stops at "--" (and at the first non-flag), leaving CMD in fs.Args().
	if err := fs.Parse(args); err != nil {
		return 2
	}
	command := fs.Args()
	if len(command) == 0 {
		logf("run: no command given")
		fmt.Fprint(os.Stderr, usage)
		return 2
	}

	// Take over SIGINT/SIGTERM before anything is created: from here on a
	// signal must lead to cleanup, not to an abrupt exit. While the cluster
	// starts, a signal cancels the start; once CMD runs, it is forwarded.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fwd := newForwarder(cancel)
	defer fwd.stop()

	// Adopt the servers started below (ours and those of test binaries) so
	// that they are reaped as soon as they stop instead of lingering as
	// zombies; see embedded.AdoptServers.
	if err := pgembedded.AdoptServers(); err != nil {
		logf("warning: cannot become a child subreaper: %v", err)
	}
	// Runs last (deferred first): by then no child of ours is running.
	defer pgembedded.ReapAdopted()

	tmp, err := os.MkdirTemp("", "hephaestus-pgcluster-")
	if err != nil {
		logf("create temp dir: %v", err)
		return 1
	}
	var cluster *pgembedded.Cluster
	// cleanup runs exactly once on every path below.
	cleanup := func() {
		if cluster != nil {
			stopCtx, stopCancel := context.WithTimeout(context.Background(), stopTimeout)
			if err := cluster.Stop(stopCtx); err != nil {
				logf("%v", err)
			}
			stopCancel()
		}
		if *keep {
			logf("kept %s (server log: %s/postgres.log)", tmp, tmp)
			return
		}
		if err := os.RemoveAll(tmp); err != nil {
			logf("remove %s: %v", tmp, err)
		}
	}

	cluster, err = pgembedded.Start(ctx, pgembedded.Options{
		DataDir:  tmp,
		BinDir:   *binDir,
		Durable:  *durable,
		Settings: settings.with("max_connections", strconv.Itoa(*maxConns)),
		Log:      progress,
	})
	if err != nil {
		logf("%v", err)
		cleanup()
		if sig := fwd.received(); sig != nil {
			return signalExitCode(sig)
		}
		return 1
	}
	if sig := fwd.received(); sig != nil {
		logf("interrupted by %v before %s started", sig, command[0])
		cleanup()
		return signalExitCode(sig)
	}

	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = withEnv(os.Environ(), map[string]string{
		envDatabaseURL: cluster.AdminURL(),
		envPGBin:       cluster.BinDir(),
	})
	if err := fwd.startChild(cmd); err != nil {
		logf("%v", err)
		cleanup()
		if sig := fwd.received(); sig != nil {
			return signalExitCode(sig)
		}
		return 127 // the shell's "command not found"
	}
	_ = cmd.Wait() // the exit status is read from ProcessState below
	code := exitCode(cmd.ProcessState)
	cleanup()
	return code
}

// forwarder owns SIGINT/SIGTERM for `run`: before the child exists a signal
// cancels startup; afterwards it is passed on to the child, which decides
// how to wind down (go test, for one, prints its partial results first).
// Signals arriving during cleanup are forwarded to the exited child, i.e.
// ignored, so a second Ctrl-C cannot leave a server behind.
type forwarder struct {
	sigs   chan os.Signal
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	child *os.Process
	first os.Signal
}

func newForwarder(cancel context.CancelFunc) *forwarder {
	f := &forwarder{sigs: make(chan os.Signal, 8), cancel: cancel, done: make(chan struct{})}
	signal.Notify(f.sigs, syscall.SIGINT, syscall.SIGTERM)
	go f.loop()
	return f
}

func (f *forwarder) loop() {
	for {
		select {
		case sig := <-f.sigs:
			f.mu.Lock()
			if f.first == nil {
				f.first = sig
			}
			if f.child != nil {
				_ = f.child.Signal(sig)
			} else {
				f.cancel()
			}
			f.mu.Unlock()
		case <-f.done:
			return
		}
	}
}

// startChild starts cmd under the lock, so a signal arriving concurrently
// is either seen before (and the child not started) or forwarded to it.
func (f *forwarder) startChild(cmd *exec.Cmd) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.first != nil {
		return fmt.Errorf("interrupted by %v", f.first)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	f.child = cmd.Process
	return nil
}

func (f *forwarder) received() os.Signal {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.first
}

func (f *forwarder) stop() {
	signal.Stop(f.sigs)
	close(f.done)
}

// exitCode maps the child's end to ours, the way a shell does: its exit
// status, or 128+N when signal N killed it.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return 1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

func signalExitCode(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}

// serverSettings is the -set flag: PostgreSQL settings passed to the server as given.
type serverSettings map[string]string

func (s serverSettings) String() string { return fmt.Sprint(map[string]string(s)) }

func (s serverSettings) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", v)
	}
	s[name] = value
	return nil
}

// with returns the settings with name set to value unless -set gave it.
func (s serverSettings) with(name, value string) map[string]string {
	out := map[string]string{name: value}
	for k, v := range s {
		out[k] = v
	}
	return out
}

// withEnv returns env with the given variables set, replacing any earlier
// values (e.g. from an outer pgcluster) rather than appending duplicates.
func withEnv(env []string, set map[string]string) []string {
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if _, replaced := set[name]; !replaced {
			out = append(out, kv)
		}
	}
	for name, value := range set {
		out = append(out, name+"="+value)
	}
	return out
}

// cmdUp implements `pgcluster up`: start or reuse a cluster in DIR and
// leave it running.
func cmdUp(args []string) int {
	fs := newFlagSet("up")
	dir := fs.String("dir", "", "cluster directory (required)")
	port := fs.Int("port", 0, "TCP port on 127.0.0.1 (0 = pick a free one)")
	durable := fs.Bool("durable", false, "keep PostgreSQL's crash-safety defaults")
	maxConns := fs.Int("max-connections", defaultMaxConnections, "server max_connections")
	settings := serverSettings{}
	fs.Var(settings, "set", "a server setting NAME=VALUE (repeatable), e.g. shared_preload_libraries=pg_stat_statements")
	binDir := fs.String("bin", "", "PostgreSQL bin dir (default: discovered)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dir == "" || fs.NArg() != 0 {
		logf("up: -dir is required and no other arguments are accepted")
		fmt.Fprint(os.Stderr, usage)
		return 2
	}
	opts := pgembedded.Options{
		DataDir:  *dir,
		BinDir:   *binDir,
		Port:     *port,
		Durable:  *durable,
		Settings: settings.with("max_connections", strconv.Itoa(*maxConns)),
		Log:      progress,
	}

	cluster, err := pgembedded.Attach(opts)
	switch {
	case err == nil:
		logf("reusing the server already running in %s", *dir)
		if *port != 0 && cluster.Port() != *port {
			logf("note: it listens on port %d, not %d; run `pgcluster down -dir %s` first to change it",
				cluster.Port(), *port, *dir)
		}
	case errors.Is(err, pgembedded.ErrNotRunning):
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		cluster, err = pgembedded.Start(ctx, opts)
		if err != nil {
			logf("%v", err)
			return 1
		}
	default:
		logf("%v", err)
		return 1
	}
	logf("export %s='%s' %s='%s'", envDatabaseURL, cluster.AdminURL(), envPGBin, cluster.BinDir())
	logf("stop it with: go run ./cmd/pgcluster down -dir %s", *dir)
	fmt.Println(cluster.AdminURL())
	return 0
}

// cmdDown implements `pgcluster down`.
func cmdDown(args []string) int {
	fs := newFlagSet("down")
	dir := fs.String("dir", "", "cluster directory (required)")
	binDir := fs.String("bin", "", "PostgreSQL bin dir (default: discovered)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dir == "" || fs.NArg() != 0 {
		logf("down: -dir is required and no other arguments are accepted")
		fmt.Fprint(os.Stderr, usage)
		return 2
	}
	if pgembedded.IsFormation(*dir) {
		f, err := pgembedded.AttachFormation(*dir)
		if err != nil {
			logf("%v", err)
			return 1
		}
		f.SetLog(progress)
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		defer cancel()
		if err := f.Stop(ctx); err != nil {
			logf("%v", err)
			return 1
		}
		return 0
	}
	cluster, err := pgembedded.Attach(pgembedded.Options{DataDir: *dir, BinDir: *binDir, Log: progress})
	if errors.Is(err, pgembedded.ErrNotRunning) {
		logf("no server is running in %s", *dir)
		return 0
	}
	if err != nil {
		logf("%v", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if err := cluster.Stop(ctx); err != nil {
		logf("%v", err)
		return 1
	}
	return 0
}

// cmdHA implements `pgcluster ha`: start a pg_auto_failover formation in DIR and leave it
// running.
func cmdHA(args []string) int {
	fs := newFlagSet("ha")
	dir := fs.String("dir", "", "formation directory (required)")
	defaults := fs.Bool("default-timings", false, "keep pg_auto_failover's own monitor timings (a failover of about 52 s)")
	binDir := fs.String("bin", "", "PostgreSQL bin dir (default: discovered)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dir == "" || fs.NArg() != 0 {
		logf("ha: -dir is required and no other arguments are accepted")
		fmt.Fprint(os.Stderr, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	f, err := pgembedded.StartFormation(ctx, pgembedded.FormationOptions{
		Dir: *dir, BinDir: *binDir, DefaultTimings: *defaults, Log: progress,
	})
	if err != nil {
		logf("%v", err)
		return 1
	}
	logf("export DATABASE_URL='%s'", f.URL())
	logf("stop it with: go run ./cmd/pgcluster down -dir %s", *dir)
	fmt.Println(f.URL())
	return 0
}
