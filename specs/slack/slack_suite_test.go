package slack_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"

	"github.com/hephaestus-dev/hephaestus/adapters/http/mirrorapi/slackread"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	pgmanagement "github.com/hephaestus-dev/hephaestus/adapters/postgres/management"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/pgtest"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/slackmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/secrets"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/handlers"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

func TestSlack(t *testing.T) {
	RegisterFailHandler(Fail)
	leaks := goleak.IgnoreCurrent()
	RunSpecs(t, "Slack handlers, mirror and read API")
	goleak.VerifyNone(t, leaks,
		goleak.IgnoreTopFunction("github.com/onsi/ginkgo/v2/internal/interrupt_handler.(*InterruptHandler).registerForInterrupts.func2"))
}

const adminToken = "spec-instance-admin-token-0123456789"

var (
	db       *pgtest.Database
	pool     *pgxpool.Pool
	store    *slackmirror.Store
	faulty   *faultyStore
	notifier *fakeNotifier
	registry = fakeRegistry{}
	svc      *management.Service
	server   *httptest.Server
	client   *http.Client
)

var _ = BeforeSuite(func(ctx SpecContext) {
	var err error
	db, err = pgtest.NewDatabase(ctx)
	if errors.Is(err, pgtest.ErrNoCluster) {
		Skip(err.Error())
	}
	Expect(err).NotTo(HaveOccurred())
	pool, err = db.Pool(ctx, 8)
	Expect(err).NotTo(HaveOccurred())
	box, err := deliveryinbox.New(pool)
	Expect(err).NotTo(HaveOccurred())
	store, err = slackmirror.New(pool)
	Expect(err).NotTo(HaveOccurred())
	faulty = &faultyStore{Store: store}
	notifier = &fakeNotifier{}
	Expect(handlers.Register(registry, handlers.Deps{Inbox: box, Store: faulty, Notifier: notifier, Log: specLogger{}})).To(Succeed())

	key := make([]byte, secrets.KeySize)
	_, _ = rand.Read(key)
	secretBox, err := secrets.NewAESGCM(key)
	Expect(err).NotTo(HaveOccurred())
	workspaces, err := pgmanagement.NewWorkspaces(pool)
	Expect(err).NotTo(HaveOccurred())
	connections, err := pgmanagement.NewConnections(pool, pgmanagement.Config{})
	Expect(err).NotTo(HaveOccurred())
	svc, err = management.New(management.Config{AdminToken: adminToken}, workspaces, workspaces, connections, secretBox, nil)
	Expect(err).NotTo(HaveOccurred())

	gin.SetMode(gin.TestMode)
	engine := gin.New()
	Expect(slackread.Register(engine, slackread.Config{Auth: svc, Members: workspaces, Store: store, Log: specLogger{}})).To(Succeed())
	server = httptest.NewServer(engine)
	client = &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
})

var _ = AfterSuite(func(ctx SpecContext) {
	if client != nil {
		client.CloseIdleConnections()
	}
	if server != nil {
		server.Close()
	}
	if pool != nil {
		pool.Close()
	}
	if db != nil {
		Expect(db.Drop(context.WithoutCancel(ctx))).To(Succeed())
	}
})

var _ = BeforeEach(func(ctx SpecContext) {
	Expect(pgtest.Truncate(ctx, pool)).To(Succeed())
	faulty.reset()
	notifier.reset()
})

// fakeRegistry keeps the handlers Register wires, by event type.
type fakeRegistry map[string]ports.Handler

func (r fakeRegistry) Register(p provider.Provider, eventType string, h ports.Handler) error {
	if p.String() != "SLACK" {
		return fmt.Errorf("registered for %s", p)
	}
	if _, dup := r[eventType]; dup {
		return fmt.Errorf("%q registered twice", eventType)
	}
	r[eventType] = h
	return nil
}

type specLogger struct{}

func (specLogger) Debugw(msg string, kv ...any) { fmt.Fprintln(GinkgoWriter, "DEBUG", msg, kv) }
func (specLogger) Infow(msg string, kv ...any)  { fmt.Fprintln(GinkgoWriter, "INFO", msg, kv) }
func (specLogger) Warnw(msg string, kv ...any)  { fmt.Fprintln(GinkgoWriter, "WARN", msg, kv) }
func (specLogger) Errorw(msg string, kv ...any) { fmt.Fprintln(GinkgoWriter, "ERROR", msg, kv) }
