package changes_test

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// An organization row is written by every delivery of every repository of the organization,
// and the claimers handle those repositories' scopes in parallel: its row lock must not be
// held through a step. What the mirror and the change feed show must not change.
var _ = Describe("The organization row every repository's deliveries share", func() {
	h := withHandlers(nil, githubPublishing)

	// leasedIssue leases an issues delivery of repository app (or app-2) of the organization
	// login; deliveries leased later have newer event ids, the organization's version.
	leasedIssue := func(ctx context.Context, repo int64, login string) support.Delivery {
		GinkgoHelper()
		r := obj{"id": repo, "name": "app", "full_name": "acme/app", "owner": ghUser(900, "acme")}
		return support.LeasedEvent(ctx, writerPool, h.ws, github.Provider, "issues", "github:spec", ghBody(obj{
			"action": "edited", "issue": ghIssue("Crash", "2024-02-02T00:00:00Z"), "repository": r,
			"organization": obj{"id": 900, "login": login},
		}))
	}
	organization := func(ctx context.Context) (login string, eventID int64) {
		GinkgoHelper()
		Expect(writerPool.QueryRow(ctx, `SELECT login, source_event_id FROM github_organization WHERE workspace_id = $1 AND id = 900`,
			h.ws).Scan(&login, &eventID)).To(Succeed())
		return login, eventID
	}
	organizationChanges := func(ctx context.Context) []string {
		GinkgoHelper()
		page, err := h.feed.Changes(ctx, h.ws, change.Cursor{}, 100)
		Expect(err).NotTo(HaveOccurred())
		var logins []string
		for _, c := range page {
			if c.Type == "github.organization.upserted" {
				var v struct{ Login string }
				Expect(json.Unmarshal(entity(c.Data), &v)).To(Succeed())
				logins = append(logins, v.Login)
			}
		}
		return logins
	}
	// lockOrganization holds the organization row's update lock (see holdRowLock).
	lockOrganization := func(ctx context.Context, sql string) func(commit bool) {
		GinkgoHelper()
		return holdRowLock(ctx, "github_organization", 900, h.ws, sql)
	}
	// handleAside handles d on another goroutine; the channel receives its error.
	handleAside := func(ctx context.Context, d support.Delivery) <-chan error {
		done := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			done <- d.Handle(ctx, h.reg)
		}()
		return done
	}
	// waitingAtCommit reports whether a backend waits for a row lock in the statement the step
	// sends with its COMMIT (lockOrganizationUnchanged).
	waitingAtCommit := func(ctx context.Context) bool {
		return support.Scalar[bool](ctx, writerPool, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '%mirror_write_unchanged%')`)
	}

	When("an older delivery of another repository arrives after a newer one stored the organization", func() {
		It("leaves the row alone without waiting for its lock", func(ctx SpecContext) {
			older, newer := leasedIssue(ctx, 4242, "acme"), leasedIssue(ctx, 4243, "acme")
			Expect(newer.Handle(ctx, h.reg)).To(Succeed())
			_, stored := organization(ctx)
			before := support.Scalar[string](ctx, writerPool, `SELECT xmin::text FROM github_organization WHERE workspace_id = $1 AND id = 900`, h.ws)

			release := lockOrganization(ctx, "")
			hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			Expect(older.Handle(hctx, h.reg)).To(Succeed(), "the older event's write would lose to the version rule: it takes no lock")
			release(false)

			_, eventID := organization(ctx)
			Expect(eventID).To(Equal(stored))
			Expect(support.Scalar[string](ctx, writerPool, `SELECT xmin::text FROM github_organization WHERE workspace_id = $1 AND id = 900`, h.ws)).
				To(Equal(before), "no new row version")
		})
	})

	When("a newer delivery carries the organization as stored", func() {
		It("moves its version in the round trip that commits the step, and publishes nothing", func(ctx SpecContext) {
			first, second := leasedIssue(ctx, 4242, "acme"), leasedIssue(ctx, 4243, "acme")
			Expect(first.Handle(ctx, h.reg)).To(Succeed())
			Expect(organizationChanges(ctx)).To(Equal([]string{"acme"}))

			release := lockOrganization(ctx, "")
			done := handleAside(ctx, second)
			Eventually(waitingAtCommit).WithContext(ctx).WithTimeout(10*time.Second).Should(BeTrue(),
				"the step waits for the organization's lock only in the statement sent with its COMMIT")
			Consistently(done).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())
			release(false)
			Eventually(done).WithTimeout(10 * time.Second).Should(Receive(BeNil()))

			_, eventID := organization(ctx)
			Expect(eventID).To(Equal(second.ID))
			Expect(organizationChanges(ctx)).To(Equal([]string{"acme"}), "nothing of the organization changed")
		})
	})

	When("the organization is renamed between the step's read and its commit", func() {
		It("aborts the step as contention, and the retry writes and publishes the event's organization", func(ctx SpecContext) {
			first, second := leasedIssue(ctx, 4242, "acme"), leasedIssue(ctx, 4243, "acme")
			Expect(first.Handle(ctx, h.reg)).To(Succeed())

			// An older writer renames it under the lock (as a reporting upsert of an older event
			// that lost nothing to the version rule would).
			release := lockOrganization(ctx, `UPDATE github_organization SET login = 'acme-old' WHERE workspace_id = $1 AND id = 900`)
			done := handleAside(ctx, second)
			Eventually(waitingAtCommit).WithContext(ctx).WithTimeout(10 * time.Second).Should(BeTrue())
			release(true)
			var err error
			Eventually(done).WithTimeout(10 * time.Second).Should(Receive(&err))
			var transient *inbox.TransientError
			Expect(errors.As(err, &transient)).To(BeTrue(), "contention, retried: %v", err)
			Expect(transient.Conflict).To(BeTrue())
			login, _ := organization(ctx)
			Expect(login).To(Equal("acme-old"), "the aborted step wrote nothing")

			second.NextLease(ctx)
			Expect(second.Handle(ctx, h.reg)).To(Succeed())
			login, eventID := organization(ctx)
			Expect(login).To(Equal("acme"))
			Expect(eventID).To(Equal(second.ID))
			Expect(organizationChanges(ctx)).To(Equal([]string{"acme", "acme"}),
				"the retry published the organization it changed back")
		})
	})

	When("the organization row is deleted between the step's read and its commit", func() {
		It("aborts the step as contention, and the retry writes it again", func(ctx SpecContext) {
			first, second := leasedIssue(ctx, 4242, "acme"), leasedIssue(ctx, 4243, "acme")
			Expect(first.Handle(ctx, h.reg)).To(Succeed())

			release := lockOrganization(ctx, `DELETE FROM github_organization WHERE workspace_id = $1 AND id = 900`)
			done := handleAside(ctx, second)
			Eventually(waitingAtCommit).WithContext(ctx).WithTimeout(10 * time.Second).Should(BeTrue())
			release(true)
			var err error
			Eventually(done).WithTimeout(10 * time.Second).Should(Receive(&err))
			var transient *inbox.TransientError
			Expect(errors.As(err, &transient)).To(BeTrue(), "contention, retried: %v", err)
			Expect(support.Scalar[int](ctx, writerPool, `SELECT count(*) FROM github_organization WHERE workspace_id = $1`, h.ws)).To(BeZero())

			second.NextLease(ctx)
			Expect(second.Handle(ctx, h.reg)).To(Succeed())
			_, eventID := organization(ctx)
			Expect(eventID).To(Equal(second.ID))
		})
	})
})

// A user row is written by every delivery the person appears in, a label row by every
// delivery of an issue or pull request that carries it, across scopes.
var _ = Describe("The user and label rows deliveries share", func() {
	var (
		ws  int64
		reg *consumer.Registry
	)

	BeforeEach(func(ctx SpecContext) {
		ws = support.Workspace(ctx, writerPool, "acme")
		_, reg = githubHandlers(nil)
	})

	leasedIssue := func(ctx context.Context, repo int64) support.Delivery {
		GinkgoHelper()
		r := obj{"id": repo, "name": "app", "full_name": "acme/app", "owner": ghUser(77, "acme")}
		return support.LeasedEvent(ctx, writerPool, ws, github.Provider, "issues", "github:spec", ghBody(obj{
			"action": "edited", "issue": ghIssue("Crash", "2024-02-02T00:00:00Z"), "repository": r,
		}))
	}
	userRow := func(ctx context.Context) (xmin string, eventID int64) {
		GinkgoHelper()
		Expect(writerPool.QueryRow(ctx, `SELECT xmin::text, source_event_id FROM github_user WHERE workspace_id = $1 AND id = 7`,
			ws).Scan(&xmin, &eventID)).To(Succeed())
		return xmin, eventID
	}

	When("an older delivery arrives after a newer one stored the person", func() {
		It("opens no users transaction: it neither writes the row nor waits for its lock", func(ctx SpecContext) {
			older, newer := leasedIssue(ctx, 4242), leasedIssue(ctx, 4243)
			Expect(newer.Handle(ctx, reg)).To(Succeed())
			before, stored := userRow(ctx)
			Expect(stored).To(Equal(newer.ID))

			release := holdRowLock(ctx, "github_user", 7, ws, "")
			hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			Expect(older.Handle(hctx, reg)).To(Succeed())
			release(false)

			after, eventID := userRow(ctx)
			Expect(after).To(Equal(before), "no new row version")
			Expect(eventID).To(Equal(newer.ID))
			Expect(older.Steps(ctx)).To(ContainElement("issue.upsert"), "the older delivery's own step still ran")
		})
	})

	When("an older delivery arrives after a newer one stored its label", func() {
		It("opens no labels transaction: it neither writes the row nor waits for its lock", func(ctx SpecContext) {
			older, newer := leasedIssue(ctx, 4242), leasedIssue(ctx, 4243)
			Expect(newer.Handle(ctx, reg)).To(Succeed())
			label := `SELECT xmin::text FROM github_label WHERE workspace_id = $1 AND id = 501`
			before := support.Scalar[string](ctx, writerPool, label, ws)

			release := holdRowLock(ctx, "github_label", 501, ws, "")
			hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			Expect(older.Handle(hctx, reg)).To(Succeed())
			release(false)
			Expect(support.Scalar[string](ctx, writerPool, label, ws)).To(Equal(before), "no new row version")
		})
	})

	When("a newer delivery names the person", func() {
		It("moves the row to the newer event", func(ctx SpecContext) {
			older, newer := leasedIssue(ctx, 4242), leasedIssue(ctx, 4243)
			Expect(older.Handle(ctx, reg)).To(Succeed())
			Expect(newer.Handle(ctx, reg)).To(Succeed())
			_, eventID := userRow(ctx)
			Expect(eventID).To(Equal(newer.ID))
		})
	})
})

// holdRowLock takes the update lock of the workspace's row id of table in a transaction of its
// own and runs sql (with the workspace as $1, none when empty) under it, until the returned
// function ends the transaction (commit: true commits what sql did). A spec that fails while
// holding the lock still ends it, so that no handler stays blocked on it.
func holdRowLock(ctx context.Context, table string, id, ws int64, sql string) func(commit bool) {
	GinkgoHelper()
	tx, err := writerPool.Begin(ctx)
	Expect(err).NotTo(HaveOccurred())
	_, err = tx.Exec(ctx, `SELECT 1 FROM `+table+` WHERE workspace_id = $1 AND id = $2 FOR NO KEY UPDATE`, ws, id)
	Expect(err).NotTo(HaveOccurred())
	if sql != "" {
		_, err = tx.Exec(ctx, sql, ws)
		Expect(err).NotTo(HaveOccurred())
	}
	ended := false
	DeferCleanup(func(ctx context.Context) {
		if !ended {
			_ = tx.Rollback(ctx)
		}
	})
	return func(commit bool) {
		ended = true
		if commit {
			Expect(tx.Commit(ctx)).To(Succeed())
			return
		}
		Expect(tx.Rollback(ctx)).To(Succeed())
	}
}
