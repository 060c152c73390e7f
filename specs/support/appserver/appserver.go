// Package appserver runs the whole service for a spec, as `hephaestus serve` runs it: the
// bootstrap composition with its router, its claimers and its own pools on a database of the
// spec's, reached over HTTP. It is apart from package support so that only the specs that start
// a whole server link the composition.
package appserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"go.uber.org/zap"

	"github.com/hephaestus-dev/hephaestus/bootstrap"
)

// Options is what a spec's server is started with.
type Options struct {
	// Env is the server's environment: at least bootstrap.EnvDatabaseURL and
	// bootstrap.EnvAdminToken. Start adds bootstrap.EnvHTTPAddr (a free local port) and, when
	// Env has none, a fresh bootstrap.EnvCredentialsKey.
	Env map[string]string
	// Lookup answers the variables Env does not name (nil: they are unset).
	Lookup func(name string) string
	// Configure changes the loaded configuration before the composition (nil: nothing).
	Configure func(cfg *bootstrap.Config)
	// Logger is the server's logger (nil: a no-op one).
	Logger *zap.Logger
}

// Server is one running server.
type Server struct {
	// Base is the server's URL, "http://host:port".
	Base string
	// Config is the configuration it runs with.
	Config bootstrap.Config
	// Stop stops the server and waits until it stopped cleanly; it runs once, at the latest when
	// the spec's container ends.
	Stop func()
}

// NewCredentialsKey is a fresh random credentials key in the form bootstrap.EnvCredentialsKey
// takes, for servers that must open each other's sealed secrets.
func NewCredentialsKey() string {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	return base64.StdEncoding.EncodeToString(key)
}

// Start runs the server on a free local port and returns once its /readyz answers 200.
func Start(opts Options) *Server {
	ginkgo.GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	addr := ln.Addr().String()
	gomega.Expect(ln.Close()).To(gomega.Succeed())
	env := map[string]string{bootstrap.EnvHTTPAddr: addr, bootstrap.EnvCredentialsKey: NewCredentialsKey()}
	for k, v := range opts.Env {
		env[k] = v
	}
	cfg, err := bootstrap.LoadConfig(func(name string) string {
		if v, ok := env[name]; ok {
			return v
		}
		if opts.Lookup != nil {
			return opts.Lookup(name)
		}
		return ""
	})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	if opts.Configure != nil {
		opts.Configure(&cfg)
	}
	logger := opts.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	app, err := bootstrap.InitializeApp(cfg, logger)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	appCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(appCtx) }()
	var once sync.Once
	s := &Server{Base: "http://" + addr, Config: cfg}
	s.Stop = func() {
		once.Do(func() {
			cancel()
			gomega.Eventually(done).WithTimeout(60*time.Second).Should(gomega.Receive(gomega.BeNil()), "the server stops cleanly")
		})
	}
	ginkgo.DeferCleanup(s.Stop)
	hc := &http.Client{Timeout: 5 * time.Second}
	gomega.Eventually(func() int {
		resp, err := hc.Get(s.Base + "/readyz")
		if err != nil {
			return 0
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}).WithTimeout(60 * time.Second).WithPolling(50 * time.Millisecond).Should(gomega.Equal(http.StatusOK))
	return s
}

// Call sends body as JSON to the server with token as the bearer, expects the status want and
// returns the answer's JSON object.
func (s *Server) Call(ctx context.Context, client *http.Client, method, path, token string, body any, want int) map[string]any {
	ginkgo.GinkgoHelper()
	raw, err := json.Marshal(body)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	req, err := http.NewRequestWithContext(ctx, method, s.Base+path, bytes.NewReader(raw))
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	gomega.Expect(resp.StatusCode).To(gomega.Equal(want), string(answer))
	out := map[string]any{}
	gomega.Expect(json.Unmarshal(answer, &out)).To(gomega.Succeed())
	return out
}
