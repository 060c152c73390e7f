// Command hephaestus is the integration backend: `serve` runs the webhook receiver and the
// claimers, `migrate` applies the embedded migrations, `rotate-credentials` re-seals the
// connection secrets with the first credentials key. Configuration comes from the
// environment (CONTRACT.md's Configuration table); bootstrap owns everything else.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"go.uber.org/zap"

	"github.com/hephaestus-dev/hephaestus/bootstrap"
)

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1 // the start or the run failed (no database, no PostgreSQL binaries, …)
	exitUsage  = 2 // bad command line or configuration
)

const usage = `usage: hephaestus <command>

commands:
  serve     receive webhooks and run the claimers until SIGTERM or SIGINT
  migrate   apply the embedded database migrations and exit
  rotate-credentials
            re-seal every connection secret with the first key of HEPHAESTUS_CREDENTIALS_KEY
            (servers keep running)
  version   print the version

Configuration is read from the environment (DATABASE_URL, HEPHAESTUS_*). Without DATABASE_URL
a local PostgreSQL cluster under HEPHAESTUS_DATA_DIR (default ./.data) is used.
`

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		if len(args) > 1 {
			fmt.Fprintf(stderr, "hephaestus: unexpected arguments after %q\n", args[0])
		}
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "serve":
		return serve(getenv, stderr)
	case "migrate":
		return migrate(getenv, stdout, stderr)
	case "rotate-credentials":
		return rotateCredentials(getenv, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "hephaestus", version())
		return exitOK
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "hephaestus: unknown command %q\n%s", args[0], usage)
		return exitUsage
	}
}

// signalContext is cancelled by the first SIGTERM or SIGINT. After that the signals get their
// default action back, so a second Ctrl-C ends a shutdown that hangs.
func signalContext() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	context.AfterFunc(ctx, stop)
	return ctx, stop
}

// setup reads the configuration and builds the logger; ok is false after it reported why not.
func setup(getenv func(string) string, stderr io.Writer) (bootstrap.Config, *zap.Logger, int, bool) {
	cfg, err := bootstrap.LoadConfig(getenv)
	if err != nil {
		return cfg, nil, report(stderr, err), false
	}
	log, err := bootstrap.NewLogger(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "hephaestus: %v\n", err)
		return cfg, nil, exitUsage, false
	}
	return cfg, log, exitOK, true
}

func serve(getenv func(string) string, stderr io.Writer) int {
	cfg, log, code, ok := setup(getenv, stderr)
	if !ok {
		return code
	}
	defer func() { _ = log.Sync() }()
	app, err := bootstrap.InitializeApp(cfg, log)
	if err != nil {
		return report(stderr, err)
	}
	ctx, stop := signalContext()
	defer stop()
	if err := app.Run(ctx); err != nil {
		// No stack: the error says what failed, and this line is for the log pipeline.
		log.WithOptions(zap.AddStacktrace(zap.FatalLevel)).Error("serve failed", zap.Error(err))
		_ = log.Sync()
		return report(stderr, err)
	}
	return exitOK
}

func migrate(getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, log, code, ok := setup(getenv, stderr)
	if !ok {
		return code
	}
	defer func() { _ = log.Sync() }()
	ctx, stop := signalContext()
	defer stop()
	applied, err := bootstrap.Migrate(ctx, cfg, log)
	if err != nil {
		_ = log.Sync()
		return report(stderr, err)
	}
	fmt.Fprintf(stdout, "applied %d migrations\n", applied)
	return exitOK
}

func rotateCredentials(getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, log, code, ok := setup(getenv, stderr)
	if !ok {
		return code
	}
	defer func() { _ = log.Sync() }()
	ctx, stop := signalContext()
	defer stop()
	res, err := bootstrap.RotateCredentials(ctx, cfg, log, stderr)
	fmt.Fprintf(stdout, "checked %d connection secrets, re-sealed %d\n", res.Checked, res.Resealed)
	if res.Legacy > 0 {
		fmt.Fprintf(stdout, "%d sealed before key ids no longer open: set those connections' secrets again\n", res.Legacy)
	}
	if err != nil {
		_ = log.Sync()
		return report(stderr, err)
	}
	fmt.Fprintln(stdout, "secrets sealed before key ids no longer open on any server")
	return exitOK
}

// report prints err for a person: one line per invalid variable for a configuration error
// (exit 2), the error's own text otherwise (exit 1); the embedded database's missing-binaries
// error is already the one paragraph that says what to install.
func report(stderr io.Writer, err error) int {
	var ce *bootstrap.ConfigError
	if errors.As(err, &ce) {
		for _, p := range ce.Problems {
			fmt.Fprintln(stderr, p.String())
		}
		return exitUsage
	}
	fmt.Fprintf(stderr, "hephaestus: %v\n", err)
	return exitFailed
}

// version is the module version the binary was built from, or "(devel)".
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			v += " " + s.Value
		}
	}
	return v + " " + bi.GoVersion
}
