package backfill_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubapi"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubsync"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/syncjobs"
	"github.com/hephaestus-dev/hephaestus/adapters/secrets"
	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/application/backfill"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// The crash helper is this test binary run again as a killable sync server: the spec passes
// the database URL, the fake GitHub's URL and the credentials key in these variables.
const (
	syncCrashDatabaseEnv = "HEPHAESTUS_SYNC_CRASH_DATABASE_URL"
	syncCrashGitHubEnv   = "HEPHAESTUS_SYNC_CRASH_GITHUB_URL"
	syncCrashKeyEnv      = "HEPHAESTUS_SYNC_CRASH_KEY"
	syncCrashOwner       = "crashing-sync-server"
	// syncCrashLease is long, so a slow machine never loses the helper's lease before the
	// kill; the survivor's clock moves past it instead of waiting for it.
	syncCrashLease = 2 * time.Minute
)

// githubRunner is a sync server's runner of GitHub backfills on p, reading the fake at ghURL
// with the connection secrets box opens.
func githubRunner(owner string, p *pgxpool.Pool, store *syncjobs.Store, ghURL string, box ports.SecretBox, lease time.Duration) (*backfill.Runner, *telemetry.Metrics, error) {
	secretsStore, err := managementstore.NewLiveSecrets(p, box)
	if err != nil {
		return nil, nil, err
	}
	m, err := githubmirror.New(p)
	if err != nil {
		return nil, nil, err
	}
	creds := &githubapi.Credentials{Store: secretsStore}
	client, err := githubapi.New(githubapi.Config{BaseURL: ghURL, Token: creds.Token})
	if err != nil {
		return nil, nil, err
	}
	src, err := githubsync.New(client, m)
	if err != nil {
		return nil, nil, err
	}
	metrics := declaredMetrics("github")
	r, err := backfill.New(backfill.Config{Owner: owner, Workers: 1, PollInterval: 20 * time.Millisecond,
		LeaseDuration: lease, CallTimeout: 5 * time.Second, Retry: testRetry},
		store, []contract.SyncSource{src}, metrics, support.Logger{}, clock{})
	return r, metrics, err
}

// TestSyncCrashHelperProcess is the sync server the crash spec kills with SIGKILL. It runs
// GitHub backfills with the database clock and syncCrashLease until it is killed.
func TestSyncCrashHelperProcess(t *testing.T) {
	url := os.Getenv(syncCrashDatabaseEnv)
	if url == "" {
		t.Skip("runs only as the sync crash spec's helper process")
	}
	ctx := context.Background()
	key, err := hex.DecodeString(os.Getenv(syncCrashKeyEnv))
	if err != nil {
		t.Fatal(err)
	}
	box, err := secrets.NewAESGCM(key)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	store, err := syncjobs.New(p, syncjobs.Config{})
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := githubRunner(syncCrashOwner, p, store, os.Getenv(syncCrashGitHubEnv), box, syncCrashLease)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("sync server running")
	_ = r.Run(ctx) // never returns: the spec kills the process
}

var _ = Describe("A sync server killed with SIGKILL in the middle of a page's commit", func() {
	It("leaves none of the page's writes, and another server redoes the page from the last committed cursor: no duplicate, no loss", func(ctx SpecContext) {
		key := make([]byte, secrets.KeySize)
		for i := range key {
			key[i] = byte(i*7 + 3)
		}
		crashBox, err := secrets.NewAESGCM(key)
		Expect(err).NotTo(HaveOccurred())

		gh := newFakeGitHub(patToken)
		gh.add(history(appRepoID, "acme/app", appRepoBase, issueCount))
		acme := support.NewWorkspace(ctx, manage, "acme").ID
		conn := patConnectionSealedBy(ctx, crashBox, acme, patToken)

		// Issue 190 is on the second issues page; a stale copy of it is stored, and this spec
		// holds its row lock, so the helper's second page stops inside its commit after it
		// wrote issues 100–189 (a page writes its issues in id order).
		blocked := appRepoBase + 190
		_, err = pool.Exec(ctx, `
			INSERT INTO github_issue (workspace_id, id, repository_id, number, title, source_updated_at, source_event_id)
			VALUES ($1, $2, $3, 190, 'stale', '2020-01-01T00:00:00Z', 0)`, acme, blocked, appRepoID)
		Expect(err).NotTo(HaveOccurred())
		holder, err := pool.Begin(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) { _ = holder.Rollback(ctx) })
		var holderPID int32
		Expect(holder.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&holderPID)).To(Succeed())
		_, err = holder.Exec(ctx, `SELECT 1 FROM github_issue WHERE workspace_id = $1 AND id = $2 FOR UPDATE`, acme, blocked)
		Expect(err).NotTo(HaveOccurred())

		subscribe(ctx, acme, conn, appRepoID, "acme/app")

		cmd := exec.Command(os.Args[0], "-test.run=^TestSyncCrashHelperProcess$")
		cmd.Env = append(os.Environ(), syncCrashDatabaseEnv+"="+db.URL, syncCrashGitHubEnv+"="+gh.URL(),
			syncCrashKeyEnv+"="+hex.EncodeToString(key))
		session, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { session.Kill().Wait(10 * time.Second) })

		// The helper's page commit waits for the held row, with its earlier writes in flight.
		support.EventuallyBlockedBy(ctx, pool, holderPID, 1)
		Expect(job(ctx, conn, appRepoID).Cursor).To(HaveValue(Equal("issues:2")))
		Expect(gh.count("GET /repos/acme/app/issues?page=2")).To(Equal(1))
		Expect(session.Kill().Wait(10 * time.Second)).To(gexec.Exit())

		// The killed server's backend notices the closed socket once the lock is granted (it
		// does not poll it while waiting) and rolls its transaction back: none of page 2 is
		// stored, and the job still names the killed server and its page.
		Expect(holder.Rollback(ctx)).To(Succeed())
		Eventually(func() int {
			return count(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND backend_xid IS NOT NULL`)
		}).WithContext(ctx).WithTimeout(10*time.Second).Should(Equal(0), "the killed server's transaction has ended")
		Expect(count(ctx, `SELECT count(*) FROM github_issue WHERE workspace_id = $1 AND number BETWEEN 100 AND 189`, acme)).To(Equal(0))
		Expect(support.Scalar[string](ctx, pool, `SELECT title FROM github_issue WHERE workspace_id = $1 AND id = $2`, acme, blocked)).To(Equal("stale"))
		Expect(count(ctx, `SELECT count(*) FROM github_issue WHERE workspace_id = $1`, acme)).To(Equal(99+1), "page 1's 99 issues (its pull request's issue side is not an issue) and the stale copy")
		Expect(support.Scalar[string](ctx, pool, `SELECT leased_by FROM sync_job WHERE connection_id = $1 AND kind = 'BACKFILL'`, conn)).To(Equal(syncCrashOwner))

		// Server B's clock moves past the dead server's lease: it takes the job over and goes on
		// from the committed cursor.
		clockB := support.NewClock()
		jobsLate, err := syncjobs.New(poolB, syncjobs.Config{Clock: clockB})
		Expect(err).NotTo(HaveOccurred())
		b, metricsB, err := githubRunner("server-b", poolB, jobsLate, gh.URL(), crashBox, specLeaseTime)
		Expect(err).NotTo(HaveOccurred())
		clockB.Advance(syncCrashLease + time.Second)
		Eventually(func(g Gomega) string {
			g.Expect(b.Drain(ctx)).To(Succeed())
			return job(ctx, conn, appRepoID).State
		}).WithContext(ctx).WithTimeout(20 * time.Second).Should(Equal("DONE"))

		j := job(ctx, conn, appRepoID)
		Expect(j.Items).To(BeEquivalentTo(wantItems), "each item counted once")
		Expect(j.Pages).To(BeEquivalentTo(wantPages), "each page counted once")
		Expect(count(ctx, `SELECT count(*) FROM github_issue WHERE workspace_id = $1`, acme)).To(Equal(issueCount))
		Expect(count(ctx, `SELECT count(DISTINCT number) FROM github_issue WHERE workspace_id = $1`, acme)).To(Equal(issueCount))
		Expect(support.Scalar[string](ctx, pool, `SELECT title FROM github_issue WHERE workspace_id = $1 AND id = $2`, acme, blocked)).To(Equal("Issue 190"))
		Expect(gh.count("GET /repos/acme/app/issues?page=2")).To(Equal(2), "the killed server's page is read again, once")
		Expect(gh.count("GET /repos/acme/app/issues?page=1")).To(Equal(1), "a committed page is not read again")
		Expect(counter(metricsB, "sync_pages_total", "github")).To(BeEquivalentTo(wantPages - 4))
	})
})
