package gitlab_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmodel"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// faultyStore is the real mirror store with injectable failures, and a count of commit writes
// per SHA so a spec sees a commit written twice even where the table would hide it.
type faultyStore struct {
	gitlabmodel.Store
	mu             sync.Mutex
	failCommit     map[string]error
	failTimes      map[string]int // writes of the SHA that still fail with failCommit's error
	commitCalls    map[string]int
	failReadiness  error
	readinessCalls int
	// afterCommit runs inside a commit's write transaction, after the write, for its SHA.
	afterCommit map[string]func(ctx context.Context)
}

func (f *faultyStore) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failCommit, f.failTimes, f.commitCalls = map[string]error{}, map[string]int{}, map[string]int{}
	f.afterCommit = map[string]func(context.Context){}
	f.failReadiness, f.readinessCalls = nil, 0
}

func (f *faultyStore) failReadinessOnce(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failReadiness = err
}

func (f *faultyStore) SetReadiness(ctx context.Context, tx ports.Tx, ws int64, r gitlabmodel.Readiness) error {
	f.mu.Lock()
	f.readinessCalls++
	err := f.failReadiness
	f.failReadiness = nil
	f.mu.Unlock()
	if werr := f.Store.SetReadiness(ctx, tx, ws, r); werr != nil {
		return werr
	}
	return err
}

// failCommitTimes makes the next n writes of sha's commit fail with err.
func (f *faultyStore) failCommitTimes(sha string, err error, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failCommit[sha], f.failTimes[sha] = err, n
}

// consumeFailure counts one failed write of sha; f.mu is held.
func (f *faultyStore) consumeFailure(sha string) {
	if f.failTimes[sha]--; f.failTimes[sha] <= 0 {
		delete(f.failCommit, sha)
		delete(f.failTimes, sha)
	}
}

func (f *faultyStore) InsertCommit(ctx context.Context, tx ports.Tx, ws int64, c gitlabmodel.Commit) error {
	f.mu.Lock()
	f.commitCalls[c.SHA]++
	err, fail := f.failCommit[c.SHA]
	if fail {
		f.consumeFailure(c.SHA)
	}
	hook := f.afterCommit[c.SHA]
	delete(f.afterCommit, c.SHA)
	f.mu.Unlock()
	// The write happens first, so a failure proves the step's rollback, not a skipped write.
	if werr := f.Store.InsertCommit(ctx, tx, ws, c); werr != nil {
		return werr
	}
	if hook != nil {
		hook(ctx)
	}
	if fail {
		return err
	}
	return nil
}

// InsertCommits is InsertCommit for the commits written together: each is counted, the batch
// is written, then the hooks of its commits run and the first failure set for one of them is
// returned.
func (f *faultyStore) InsertCommits(ctx context.Context, tx ports.Tx, ws int64, cs []gitlabmodel.Commit) error {
	var (
		fail  error
		hooks []func(context.Context)
	)
	f.mu.Lock()
	for _, c := range cs {
		f.commitCalls[c.SHA]++
		if err, ok := f.failCommit[c.SHA]; ok && fail == nil {
			fail = err
			f.consumeFailure(c.SHA)
		}
		if hook := f.afterCommit[c.SHA]; hook != nil {
			hooks = append(hooks, hook)
			delete(f.afterCommit, c.SHA)
		}
	}
	f.mu.Unlock()
	if werr := f.Store.InsertCommits(ctx, tx, ws, cs); werr != nil {
		return werr
	}
	for _, hook := range hooks {
		hook(ctx)
	}
	return fail
}

// onCommitOnce runs hook inside the next write transaction of sha's commit, after the write.
func (f *faultyStore) onCommitOnce(sha string, hook func(ctx context.Context)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.afterCommit[sha] = hook
}

// countingInbox is the real DeliveryInbox that lists the steps a handler tried, in order,
// whether or not they ran.
type countingInbox struct {
	ports.DeliveryInbox
	mu    sync.Mutex
	tried []string
}

func (c *countingInbox) Step(ctx context.Context, step inbox.Step, fn func(context.Context, ports.Tx) error) (bool, error) {
	c.mu.Lock()
	c.tried = append(c.tried, step.String())
	c.mu.Unlock()
	return c.DeliveryInbox.Step(ctx, step, fn)
}

// Steps lists each of the steps claimed together, in order.
func (c *countingInbox) Steps(ctx context.Context, steps []inbox.Step, fn func(context.Context, ports.Tx, []bool) error) (int, error) {
	c.mu.Lock()
	for _, s := range steps {
		c.tried = append(c.tried, s.String())
	}
	c.mu.Unlock()
	return c.DeliveryInbox.Steps(ctx, steps, fn)
}

func (c *countingInbox) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tried = nil
}

func (c *countingInbox) stepsTried() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.tried)
}

func (f *faultyStore) commitWrites() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for k, v := range f.commitCalls {
		out[k] = v
	}
	return out
}

// fakeReader answers the merge request approvals read and counts the reads.
type fakeReader struct {
	reads     atomic.Int64
	approvals atomic.Int64 // approvals left
}

func (r *fakeReader) reset() { r.reads.Store(0); r.approvals.Store(0) }

func (r *fakeReader) MergeRequestApprovals(context.Context, gitlabmodel.Access, int64, int) (gitlabmodel.Approvals, error) {
	r.reads.Add(1)
	left := int(r.approvals.Load())
	return gitlabmodel.Approvals{Approved: left == 0, ApprovalsLeft: left}, nil
}

var errInjected = errors.New("injected mirror failure")
