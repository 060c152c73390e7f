package gitlab_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabread"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/erasurestore"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

func TestGitLab(t *testing.T) {
	support.RunSpecs(t, "GitLab handlers, mirror and read API")
}

const adminToken = "spec-instance-admin-token-0123456789"

var (
	pool     *pgxpool.Pool
	store    *gitlabmirror.Store
	faulty   *faultyStore
	tried    *countingInbox
	reader   *fakeReader
	registry = consumer.NewRegistry()
	svc      *management.Service
	server   *httptest.Server
	client   *http.Client
	erasures *erasurestore.Store
)

var _ = BeforeSuite(func(ctx SpecContext) {
	support.SkipWithoutCluster()
	pool = support.Pool(ctx, support.Database(ctx), 8)
	box, err := deliveryinbox.New(pool)
	Expect(err).NotTo(HaveOccurred())
	store, err = gitlabmirror.New(pool)
	Expect(err).NotTo(HaveOccurred())
	faulty = &faultyStore{Store: store}
	tried = &countingInbox{DeliveryInbox: box}
	reader = &fakeReader{}
	Expect(gitlabhandlers.Register(registry, gitlabhandlers.Deps{Inbox: tried, Store: faulty, Reader: reader})).To(Succeed())

	erasures = support.ErasureStore(pool)

	var workspaces *managementstore.Workspaces
	svc, workspaces = support.Management(pool, adminToken)

	gin.SetMode(gin.TestMode)
	engine := gin.New()
	Expect(gitlabread.Register(engine, gitlabread.Config{Auth: svc, Members: workspaces, Store: store, Log: support.Logger{}})).To(Succeed())
	server, client = support.Serve(engine)
})

var _ = BeforeEach(func(ctx SpecContext) {
	Expect(pgtest.Truncate(ctx, pool)).To(Succeed())
	faulty.reset()
	tried.reset()
	reader.reset()
})
