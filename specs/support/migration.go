package support

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"github.com/pressly/goose/v3"

	"github.com/hephaestus-dev/hephaestus/internal/pgtest"
	"github.com/hephaestus-dev/hephaestus/migrations"
)

// Migrated is a database of a spec's own that held data of an older schema and was migrated to
// the latest version, as a deployment's upgrade does; the suite's other specs keep theirs at the
// latest version.
type Migrated struct {
	// DB is the database, Pool a pool of two connections on it.
	DB   *pgtest.Database
	Pool *pgxpool.Pool

	mu      sync.Mutex
	notices []string
}

// MigrateFrom creates the database, migrates it down to schema version from, runs seed there
// (statements as one simple-protocol batch), then migrates it up to the latest version,
// recording the notices the upward migrations raise.
func MigrateFrom(ctx context.Context, from int64, seed string) *Migrated {
	ginkgo.GinkgoHelper()
	m := &Migrated{DB: Database(ctx)}
	cfg, err := pgx.ParseConfig(m.DB.URL)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.notices = append(m.notices, n.Message)
	}
	sqlDB := stdlib.OpenDB(*cfg)
	ginkgo.DeferCleanup(sqlDB.Close)
	migrator, err := goose.NewProvider(goose.DialectPostgres, sqlDB, migrations.FS)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	_, err = migrator.DownTo(ctx, from)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())

	m.Pool = Pool(ctx, m.DB, 2)
	_, err = m.Pool.Exec(ctx, seed)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	m.mu.Lock()
	m.notices = nil
	m.mu.Unlock()
	_, err = migrator.Up(ctx)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return m
}

// Notices are the messages of the notices the upward migrations raised.
func (m *Migrated) Notices() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.notices...)
}
