package slack_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackread"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

func TestSlack(t *testing.T) {
	support.RunSpecs(t, "Slack handlers, mirror and read API")
}

const adminToken = "spec-instance-admin-token-0123456789"

var (
	pool          *pgxpool.Pool
	deliveryInbox *deliveryinbox.Inbox
	store         *slackmirror.Store
	faulty        *faultyStore
	notifier      *fakeNotifier
	registry      = consumer.NewRegistry()
	svc           *management.Service
	server        *httptest.Server
	client        *http.Client
)

var _ = BeforeSuite(func(ctx SpecContext) {
	support.SkipWithoutCluster()
	pool = support.Pool(ctx, support.Database(ctx), 8)
	var err error
	deliveryInbox, err = deliveryinbox.New(pool)
	Expect(err).NotTo(HaveOccurred())
	store, err = slackmirror.New(pool)
	Expect(err).NotTo(HaveOccurred())
	faulty = &faultyStore{Store: store}
	notifier = &fakeNotifier{}
	Expect(slackhandlers.Register(registry, slackhandlers.Deps{Inbox: deliveryInbox, Store: faulty, Notifier: notifier, Log: support.Logger{}})).To(Succeed())

	var workspaces *managementstore.Workspaces
	svc, workspaces = support.Management(pool, adminToken)

	gin.SetMode(gin.TestMode)
	engine := gin.New()
	Expect(slackread.Register(engine, slackread.Config{Auth: svc, Members: workspaces, Store: store, Log: support.Logger{}})).To(Succeed())
	server, client = support.Serve(engine)
})

var _ = BeforeEach(func(ctx SpecContext) {
	Expect(pgtest.Truncate(ctx, pool)).To(Succeed())
	faulty.reset()
	notifier.reset()
})
