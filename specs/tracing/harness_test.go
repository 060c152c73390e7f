package tracing_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/zap"

	"github.com/hephaestus-dev/hephaestus/bootstrap"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
	"github.com/hephaestus-dev/hephaestus/specs/support"
	"github.com/hephaestus-dev/hephaestus/specs/support/appserver"
)

const (
	adminToken = "tracing-spec-admin-token-0123456789"
	gitlabURL  = "https://gitlab.example.com"
	projectID  = 4711
	// The secrets and person data a delivery carries: none may appear in a span.
	hookToken  = "tracing-hook-secret-0123456789"
	apiToken   = "glpat-tracing-api-token-0123456789"
	authorName = "Ana Tracer"
	authorUser = "ana-tracer"
	mrTitle    = "Payload title that stays out of traces"
)

// instance is one database shared by the servers of a spec, with the credentials key they all
// use (a connection's API token sealed by one server is opened by another).
type instance struct {
	db   *pgtest.Database
	pool *pgxpool.Pool
	key  string
	// logger, when set, is every server's logger (else a no-op one).
	logger *zap.Logger
}

func newInstance(ctx context.Context) *instance {
	GinkgoHelper()
	db := support.Database(ctx)
	return &instance{db: db, pool: support.Pool(ctx, db, 4), key: appserver.NewCredentialsKey()}
}

// server is one running bootstrap.App (its router, its claimers, its own pools).
type server struct {
	*appserver.Server
}

// start runs a server on in's database. env adds variables (the OTEL_* ones are read from the
// process environment, as the SDK reads them); exporter, when set, is the span exporter
// option the bootstrap takes instead of the OTLP one.
func (in *instance) start(serverID string, env map[string]string, exporter sdktrace.SpanExporter) *server {
	GinkgoHelper()
	vars := map[string]string{
		bootstrap.EnvDatabaseURL:     in.db.URL,
		bootstrap.EnvAdminToken:      adminToken,
		bootstrap.EnvCredentialsKey:  in.key,
		bootstrap.EnvServerID:        serverID,
		bootstrap.EnvPollInterval:    "100ms",
		bootstrap.EnvPoisonBaseDelay: "1h", // a retry waits until the spec makes it due
		bootstrap.EnvPoisonMaxDelay:  "2h",
	}
	for k, v := range env {
		vars[k] = v
	}
	return &server{appserver.Start(appserver.Options{
		Env: vars,
		Lookup: func(name string) string {
			if strings.HasPrefix(name, "OTEL_") {
				return os.Getenv(name)
			}
			return ""
		},
		Configure: func(cfg *bootstrap.Config) { cfg.SpanExporter = exporter },
		Logger:    in.logger,
	})}
}

var hc = &http.Client{Timeout: 10 * time.Second}

// call is one management API request with the administrator token.
func (s *server) call(ctx context.Context, method, path string, body any, want int) map[string]any {
	GinkgoHelper()
	return s.Call(ctx, hc, method, path, adminToken, body, want)
}

// tenant is a workspace with a GitLab connection (its hook token and API token) whose project
// subscription GitLab vouched for.
type tenant struct {
	workspace, connection int64
	hook                  string
}

func (in *instance) tenant(ctx context.Context, s *server, slug string) tenant {
	GinkgoHelper()
	ws := s.call(ctx, http.MethodPost, "/api/admin/workspaces", map[string]string{"slug": slug, "name": slug}, http.StatusCreated)
	c := s.call(ctx, http.MethodPost, "/api/workspaces/"+slug+"/connections", map[string]any{
		"kind": "GITLAB", "sourceServerUrl": gitlabURL, "config": map[string]any{}, "secret": hookToken,
	}, http.StatusCreated)
	t := tenant{workspace: int64(ws["id"].(float64)), connection: int64(c["id"].(float64)), hook: c["webhookUrl"].(string)}
	s.call(ctx, http.MethodPut, fmt.Sprintf("/api/workspaces/%s/connections/%d/api-token", slug, t.connection),
		map[string]string{"token": apiToken}, http.StatusOK)
	// The VERIFIED project subscription, written as the management API stores one.
	support.VerifiedSubscription(ctx, in.pool, t.connection, t.workspace, "GITLAB", "project", strconv.Itoa(projectID), "acme/api")
	return t
}

// mergeRequest is an opened merge request's hook body: its handler reads the approvals from
// GitLab's API with the connection's API token.
func mergeRequest(iid int) []byte {
	now := time.Now().UTC().Format(time.RFC3339)
	body, err := json.Marshal(map[string]any{
		"object_kind": "merge_request", "event_type": "merge_request",
		"user": map[string]any{"id": 7, "name": authorName, "username": authorUser},
		"project": map[string]any{"id": projectID, "name": "api", "path_with_namespace": "acme/api",
			"web_url": gitlabURL + "/acme/api", "default_branch": "main", "visibility_level": 0},
		"object_attributes": map[string]any{
			"id": 90000 + iid, "iid": iid, "target_project_id": projectID, "title": mrTitle, "description": "",
			"state": "opened", "source_branch": "fix", "target_branch": "main", "merge_status": "can_be_merged",
			"author_id": 7, "created_at": now, "updated_at": now, "action": "open",
			"url": fmt.Sprintf("%s/acme/api/-/merge_requests/%d", gitlabURL, iid),
		},
	})
	Expect(err).NotTo(HaveOccurred())
	return body
}

// deliver posts body to the tenant's hook as GitLab does, with a traceparent header of a trace
// the sender chose: the server must not make it the delivery's parent.
func (s *server) deliver(ctx context.Context, t tenant, key string, body []byte) {
	GinkgoHelper()
	req := support.GitLabHook(ctx, s.Base+t.hook, "Merge Request Hook", key, gitlabURL, hookToken, body)
	req.Header.Set("traceparent", senderTraceParent)
	resp, err := hc.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	Expect(resp.StatusCode).To(Equal(http.StatusAccepted), string(answer))
}

// senderTraceParent is a trace context a webhook sender put in its request.
const (
	senderTraceID     = "0af7651916cd43dd8448eb211c80319c"
	senderTraceParent = "00-" + senderTraceID + "-b7ad6b7169203331-01"
)

// fakeGitLab answers the merge request approvals read, failing the first n with a 503, and
// records every request's path and Authorization header.
type fakeGitLab struct {
	*httptest.Server
	mu       sync.Mutex
	failures int
	paths    []string
	tokens   []string
}

func newFakeGitLab(failures int) *fakeGitLab {
	f := &fakeGitLab{failures: failures}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.paths = append(f.paths, r.URL.Path)
		f.tokens = append(f.tokens, r.Header.Get("Private-Token")+r.Header.Get("Authorization"))
		fail := f.failures > 0 && strings.HasSuffix(r.URL.Path, "/approvals")
		if fail {
			f.failures--
		}
		f.mu.Unlock()
		switch {
		case fail:
			w.WriteHeader(http.StatusServiceUnavailable)
		case strings.HasSuffix(r.URL.Path, "/approvals"):
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"approved":false,"approvals_left":1}`)
		case r.URL.Path == fmt.Sprintf("/api/v4/projects/%d", projectID):
			// The project the connection's token can see: the access recheck of every server's
			// start (a stopped server gives its lease up) must find it, as GitLab answers it.
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"id":%d,"path_with_namespace":"acme/app"}`, projectID)
		default:
			http.NotFound(w, r)
		}
	}))
	DeferCleanup(f.Close)
	return f
}

func (f *fakeGitLab) approvalReads() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, p := range f.paths {
		if strings.HasSuffix(p, "/approvals") {
			n++
		}
	}
	return n
}

// row is the inbox row of a delivery key: id, state, attempt and stored traceparent.
type row struct {
	id          int64
	state       string
	attempt     int
	traceParent *string
}

func (in *instance) row(ctx context.Context, key string) (row, error) {
	var r row
	err := in.pool.QueryRow(ctx, `SELECT id, state, attempt, trace_parent FROM provider_event WHERE delivery_key = $1`, key).
		Scan(&r.id, &r.state, &r.attempt, &r.traceParent)
	return r, err
}

// spansNamed is the spans of the given name, in export order.
func spansNamed(spans tracetest.SpanStubs, name string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// spanAttr is the value of attribute k on s (the zero Value when s has none).
func spanAttr(s tracetest.SpanStub, k attribute.Key) attribute.Value {
	for _, kv := range s.Attributes {
		if kv.Key == k {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// noSecretIn checks every attribute, event and status of s against values that must not
// appear in a trace.
func noSecretIn(s tracetest.SpanStub, forbidden ...string) {
	GinkgoHelper()
	values := []string{s.Name, s.Status.Description}
	for _, kv := range s.Attributes {
		values = append(values, kv.Value.String())
	}
	for _, ev := range s.Events {
		values = append(values, ev.Name)
		for _, kv := range ev.Attributes {
			values = append(values, kv.Value.String())
		}
	}
	for _, v := range values {
		for _, f := range forbidden {
			Expect(v).NotTo(ContainSubstring(f), "span %s", s.Name)
		}
	}
}
