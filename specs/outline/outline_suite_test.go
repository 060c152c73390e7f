package outline_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinehandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemirror"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlineread"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

func TestOutline(t *testing.T) {
	support.RunSpecs(t, "Outline handlers, mirror and read API")
}

const adminToken = "spec-instance-admin-token-0123456789"

var (
	pool     *pgxpool.Pool
	store    *outlinemirror.Store
	faulty   *faultyStore
	registry = consumer.NewRegistry()
	svc      *management.Service
	server   *httptest.Server
	client   *http.Client
)

var _ = BeforeSuite(func(ctx SpecContext) {
	support.SkipWithoutCluster()
	pool = support.Pool(ctx, support.Database(ctx), 8)
	box, err := deliveryinbox.New(pool)
	Expect(err).NotTo(HaveOccurred())
	store, err = outlinemirror.New(pool)
	Expect(err).NotTo(HaveOccurred())
	faulty = &faultyStore{Store: store}
	Expect(outlinehandlers.Register(registry, outlinehandlers.Deps{Inbox: box, Store: faulty})).To(Succeed())

	var workspaces *managementstore.Workspaces
	svc, workspaces = support.Management(pool, adminToken)

	gin.SetMode(gin.TestMode)
	engine := gin.New()
	Expect(outlineread.Register(engine, outlineread.Config{Auth: svc, Members: workspaces, Store: store, Log: support.Logger{}})).To(Succeed())
	server, client = support.Serve(engine)
})

var _ = BeforeEach(func(ctx SpecContext) {
	Expect(pgtest.Truncate(ctx, pool)).To(Succeed())
	faulty.reset()
})
