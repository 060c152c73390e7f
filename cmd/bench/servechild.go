package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/hephaestus-dev/hephaestus/bootstrap"
)

// The administrator token and credentials key of the serve children, made once per bench run
// and handed to every child in its environment (serveSecretsEnv): the pipeline mix and the soak
// create connections through the API of one child whose sealed secrets the next child opens.
var benchAdminToken, benchCredentialsKey = func() (string, string) {
	token, key := make([]byte, 24), make([]byte, 32)
	_, _ = rand.Read(token)
	_, _ = rand.Read(key)
	return hex.EncodeToString(token), base64.StdEncoding.EncodeToString(key)
}()

const (
	envServeAdminToken     = "HEPHAESTUS_BENCH_SERVE_ADMIN_TOKEN"
	envServeCredentialsKey = "HEPHAESTUS_BENCH_SERVE_CREDENTIALS_KEY"
	envServeLogLevel       = "HEPHAESTUS_BENCH_SERVE_LOG_LEVEL" // the soak's server logs at info
	envServeCPUProfile     = "HEPHAESTUS_BENCH_SERVE_CPUPROFILE"
)

func serveSecretsEnv() []string {
	return []string{envServeAdminToken + "=" + benchAdminToken, envServeCredentialsKey + "=" + benchCredentialsKey,
		envServeCPUProfile + "=" + serveProfile}
}

// serveEnv is the environment of the pipeline's server: the benchmark database, a loopback
// listener, the bench's webhook and Slack signing secrets, the admin token and credentials key
// the parent handed down, provider API roots on a closed loopback port (nothing may leave the
// machine), WARN logs.
func serveEnv(dbURL, addr string) map[string]string {
	return map[string]string{
		"DATABASE_URL":                     dbURL,
		"HEPHAESTUS_HTTP_ADDR":             addr,
		"HEPHAESTUS_GITHUB_WEBHOOK_SECRET": string(webhookSecret),
		"HEPHAESTUS_SLACK_SIGNING_SECRET":  string(slackSigningSecret),
		"HEPHAESTUS_ADMIN_TOKEN":           os.Getenv(envServeAdminToken),
		"HEPHAESTUS_CREDENTIALS_KEY":       os.Getenv(envServeCredentialsKey),
		"HEPHAESTUS_GITHUB_API_URL":        "http://127.0.0.1:9",
		"HEPHAESTUS_GITLAB_API_URL":        "http://127.0.0.1:9",
		"HEPHAESTUS_SLACK_API_URL":         "http://127.0.0.1:9",
		"HEPHAESTUS_GITHUB_OAUTH_URL":      "http://127.0.0.1:9",
		"HEPHAESTUS_OUTLINE_API_URL":       "http://127.0.0.1:9",
		"HEPHAESTUS_LOG_LEVEL":             cmp.Or(os.Getenv(envServeLogLevel), "warn"),
	}
}

// runServeChild is the pipeline's server: `hephaestus serve` as bootstrap wires it (receiver,
// claimers with the real handlers, renewer, reaper, retention), until SIGTERM.
func runServeChild(dbURL, addr string) error {
	env := serveEnv(dbURL, addr)
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if strings.HasPrefix(k, "OTEL_") || strings.HasPrefix(k, "HEPHAESTUS_INTEGRATION_CONSUMER_") {
			// The OTEL_* variables of the bench's environment reach the server, so a run with
			// them measures the pipeline with tracing on (docs/observability.md); the consumer's
			// settings too (the soak shortens the retention windows with them).
			return os.Getenv(k)
		}
		return ""
	}
	cfg, err := bootstrap.LoadConfig(getenv)
	if err != nil {
		return err
	}
	log, err := bootstrap.NewLogger(cfg)
	if err != nil {
		return err
	}
	app, err := bootstrap.InitializeApp(cfg, log)
	if err != nil {
		return err
	}
	if path := os.Getenv(envServeCPUProfile); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return app.Run(ctx)
}

func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
