package backfill_test

import (
	"context"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/application/backfill"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// pagedSource is a GitHub sync source without GitHub: every job of workspace long has
// longPages pages, each taking pageTime to read (a provider's answer), any other job two
// instant ones; it writes nothing and records the order in which pages were read, by
// workspace.
type pagedSource struct {
	long      int64
	longPages int
	pageTime  time.Duration

	mu    sync.Mutex
	reads []int64 // workspace of each page read, in order
}

func (s *pagedSource) Provider() provider.Provider { return github.Provider }

func (s *pagedSource) NextPage(_ context.Context, job ports.SyncJob, cursor string) (ports.SyncPage, error) {
	s.mu.Lock()
	s.reads = append(s.reads, job.WorkspaceID)
	s.mu.Unlock()
	page, _ := strconv.Atoi(cursor)
	page++
	last := 2
	if job.WorkspaceID == s.long {
		last = s.longPages
		time.Sleep(s.pageTime)
	}
	return ports.SyncPage{Items: 1, Next: strconv.Itoa(page), Done: page >= last}, nil
}

func (s *pagedSource) read() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reads)
}

// firstReadOf is the index of ws's first page read, or -1.
func (s *pagedSource) firstReadOf(ws int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, w := range s.reads {
		if w == ws {
			return i
		}
	}
	return -1
}

var _ = Describe("Backfill jobs shared between workspaces", func() {
	It("starts another workspace's job within a page of its queueing while one workspace has a thousand long jobs queued", func(ctx SpecContext) {
		hog := support.NewWorkspace(ctx, manage, "hog").ID
		quiet := support.NewWorkspace(ctx, manage, "quiet").ID
		hogConn, quietConn := patConnection(ctx, hog, patToken), patConnection(ctx, quiet, patToken)
		_, err := pool.Exec(ctx, `
			INSERT INTO connection_subscription (connection_id, workspace_id, provider, resource_type, resource_id, name)
			SELECT $1, $2, 'GITHUB', 'repository', g::text, 'hog/r' || g FROM generate_series(1, 1000) g`, hogConn, hog)
		Expect(err).NotTo(HaveOccurred())
		Expect(count(ctx, `SELECT count(*) FROM sync_job WHERE workspace_id = $1 AND state = 'QUEUED'`, hog)).To(Equal(1000))

		const workers = 2
		src := &pagedSource{long: hog, longPages: 50, pageTime: 20 * time.Millisecond}
		metrics := declaredMetrics("github")
		r, err := backfill.New(backfill.Config{Owner: "server-a", Workers: workers, PollInterval: 20 * time.Millisecond,
			LeaseDuration: specLeaseTime, CallTimeout: 5 * time.Second, Retry: testRetry},
			jobs, []contract.SyncSource{src}, metrics, support.Logger{}, clock{})
		Expect(err).NotTo(HaveOccurred())
		runCtx, stop := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- r.Run(runCtx) }()
		DeferCleanup(func() {
			stop()
			Eventually(ran).WithTimeout(20 * time.Second).Should(Receive(BeNil()))
		})

		// Both workers are deep in the hog's backfills when the quiet workspace subscribes.
		Eventually(src.read).WithTimeout(20 * time.Second).Should(BeNumerically(">=", 6))
		subscribe(ctx, quiet, quietConn, 7, "quiet/app")
		queuedAt := src.read()

		Eventually(func() string { return job(ctx, quietConn, 7).State }).WithTimeout(20 * time.Second).Should(Equal("DONE"))
		// Its first page was read after at most the pages the workers had in flight (one each)
		// and one more each (one page's time): not behind the thousand jobs, nor behind one of
		// their fifty pages.
		Expect(src.firstReadOf(quiet) - queuedAt).To(BeNumerically("<=", 2*workers))
	})

	It("claims from the workspace with the fewest running jobs first, then the one whose turn came longest ago", func(ctx SpecContext) {
		older := support.NewWorkspace(ctx, manage, "older").ID
		newer := support.NewWorkspace(ctx, manage, "newer").ID
		olderConn, newerConn := patConnection(ctx, older, patToken), patConnection(ctx, newer, patToken)
		for _, repo := range []int64{1, 2, 3} {
			subscribe(ctx, older, olderConn, repo, "older/r")
		}
		for _, repo := range []int64{4, 5} {
			subscribe(ctx, newer, newerConn, repo, "newer/r")
		}
		claim := func() ports.SyncLease {
			GinkgoHelper()
			_, l, found, err := jobs.ClaimSyncJob(ctx, []string{"GITHUB"}, "server-a", specLeaseTime)
			Expect(err).NotTo(HaveOccurred())
			Expect(found).To(BeTrue())
			return l
		}
		workspaceOf := func(l ports.SyncLease) int64 {
			GinkgoHelper()
			return support.Scalar[int64](ctx, pool, `SELECT workspace_id FROM sync_job WHERE id = $1`, l.JobID)
		}
		finish := func(l ports.SyncLease) {
			GinkgoHelper()
			Expect(jobs.CommitSyncPage(ctx, l, ports.SyncPage{Done: true}, specLeaseTime)).To(Succeed())
		}

		first := claim()
		Expect(workspaceOf(first)).To(Equal(older), "no turn yet, nothing running: the oldest job")
		finish(first)
		Expect(workspaceOf(claim())).To(Equal(newer), "nothing running anywhere: newer's turn never came, older's jobs are older")
		third := claim()
		Expect(workspaceOf(third)).To(Equal(older), "none of older's running, one of newer's")
		finish(third)
		Expect(workspaceOf(claim())).To(Equal(older), "the fewest running first, although older's turn came last")
	})

	It("coalesces repeated restarts of a connection's sync into one pending job that keeps its place", func(ctx SpecContext) {
		acme := support.NewWorkspace(ctx, manage, "acme").ID
		conn := patConnection(ctx, acme, patToken)
		subscribe(ctx, acme, conn, 42, "acme/app")
		type pending struct {
			State string
			Epoch int64
			DueAt time.Time
			Jobs  int
		}
		read := func() pending {
			GinkgoHelper()
			var p pending
			Expect(pool.QueryRow(ctx, `SELECT min(state), min(lease_epoch), min(due_at), count(*) FROM sync_job WHERE connection_id = $1`, conn).
				Scan(&p.State, &p.Epoch, &p.DueAt, &p.Jobs)).To(Succeed())
			return p
		}
		before := read()
		Expect(before.State).To(Equal("QUEUED"))
		for range 5 {
			Expect(jobs.RestartSync(ctx, acme, conn)).To(Succeed())
		}
		Expect(read()).To(Equal(before), "one pending job, its epoch and place unchanged")

		// A job that started is started again from its first page, once.
		_, _, found, err := jobs.ClaimSyncJob(ctx, []string{"GITHUB"}, "server-a", specLeaseTime)
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(BeTrue())
		Expect(jobs.RestartSync(ctx, acme, conn)).To(Succeed())
		restarted := read()
		Expect(restarted.State).To(Equal("QUEUED"))
		Expect(restarted.Epoch).To(Equal(before.Epoch+2), "the claim's epoch, then the restart's")
		Expect(jobs.RestartSync(ctx, acme, conn)).To(Succeed())
		Expect(read()).To(Equal(restarted))
	})
})
