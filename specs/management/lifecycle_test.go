package management_test

import (
	"context"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/specs/support"
)

var _ = Describe("Changing a connection's lifecycle", func() {
	var id int64

	BeforeEach(func() {
		createWorkspace("acme")
		id = gitlabConnection("acme")
	})

	state := func(ctx context.Context) string {
		GinkgoHelper()
		var s string
		Expect(pool.QueryRow(ctx, `SELECT state FROM connection WHERE id = $1`, id).Scan(&s)).To(Succeed())
		return s
	}

	It("answers 200 with the connection for each transition the state machine allows", func(ctx SpecContext) {
		for _, step := range []struct{ action, want string }{
			{"suspend", "SUSPENDED"}, {"activate", "ACTIVE"}, {"uninstall", "UNINSTALLED"}, {"activate", "ACTIVE"},
			{"suspend", "SUSPENDED"}, {"uninstall", "UNINSTALLED"},
		} {
			r := call(http.MethodPost, connectionPath("acme", id, step.action), adminToken, nil)
			Expect(r.Status).To(Equal(http.StatusOK), step.action+": "+r.Raw)
			Expect(r.JSON).To(HaveKeyWithValue("state", step.want))
			Expect(r.JSON).To(HaveKeyWithValue("id", BeNumerically("==", id)))
			Expect(r.JSON).To(HaveKeyWithValue("webhookUrl", connectionWebhook(id)))
			Expect(state(ctx)).To(Equal(step.want))
		}
	})

	It("answers 409 for a transition the state machine forbids and changes nothing", func(ctx SpecContext) {
		r := call(http.MethodPost, connectionPath("acme", id, "activate"), adminToken, nil)
		Expect(r.Status).To(Equal(http.StatusConflict))
		Expect(r.JSON).To(Equal(map[string]any{"error": "forbidden-transition"}))
		Expect(state(ctx)).To(Equal("ACTIVE"))

		Expect(call(http.MethodPost, connectionPath("acme", id, "uninstall"), adminToken, nil).Status).To(Equal(http.StatusOK))
		Expect(call(http.MethodPost, connectionPath("acme", id, "suspend"), adminToken, nil).Status).To(Equal(http.StatusConflict))
		Expect(call(http.MethodPost, connectionPath("acme", id, "uninstall"), adminToken, nil).Status).To(Equal(http.StatusConflict))
		Expect(state(ctx)).To(Equal("UNINSTALLED"))
	})

	Describe("a shared-URL connection (GITHUB_APP, SLACK) that is UNINSTALLED", func() {
		var admin, member string
		var app, team int64
		BeforeEach(func() {
			admin = memberWithRole("acme", "ana", "ADMIN")
			member = memberWithRole("acme", "mia", "MEMBER")
			app = appConnection("acme", 1001)
			r := createConnection("acme", adminToken, map[string]any{"kind": "SLACK", "sourceServerUrl": "https://slack.com", "config": map[string]any{"teamId": "T1"}})
			Expect(r.Status).To(Equal(http.StatusCreated), r.Raw)
			team = r.ID("id")
		})

		stateOf := func(ctx context.Context, conn int64) string {
			GinkgoHelper()
			var s string
			Expect(pool.QueryRow(ctx, `SELECT state FROM connection WHERE id = $1`, conn).Scan(&s)).To(Succeed())
			return s
		}

		It("answers 403 install-flow-required to the workspace ADMIN who activates it, and changes nothing", func(ctx SpecContext) {
			for _, conn := range []int64{app, team} {
				Expect(call(http.MethodPost, connectionPath("acme", conn, "uninstall"), admin, nil).Status).To(Equal(http.StatusOK), "the ADMIN may uninstall")
				r := call(http.MethodPost, connectionPath("acme", conn, "activate"), admin, nil)
				Expect(r.Status).To(Equal(http.StatusForbidden), r.Raw)
				Expect(r.JSON).To(Equal(map[string]any{"error": "install-flow-required"}))
				Expect(stateOf(ctx, conn)).To(Equal("UNINSTALLED"))
				Expect(call(http.MethodPost, connectionPath("acme", conn, "activate"), member, nil).Status).To(Equal(http.StatusForbidden))
				Expect(stateOf(ctx, conn)).To(Equal("UNINSTALLED"))
			}
		})

		It("lets the workspace ADMIN suspend and activate it again while it is not UNINSTALLED", func(ctx SpecContext) {
			for _, conn := range []int64{app, team} {
				Expect(call(http.MethodPost, connectionPath("acme", conn, "suspend"), admin, nil).Status).To(Equal(http.StatusOK))
				Expect(call(http.MethodPost, connectionPath("acme", conn, "activate"), admin, nil).Status).To(Equal(http.StatusOK))
				Expect(stateOf(ctx, conn)).To(Equal("ACTIVE"))
			}
		})

		It("lets the instance administrator activate it", func(ctx SpecContext) {
			for _, conn := range []int64{app, team} {
				Expect(call(http.MethodPost, connectionPath("acme", conn, "uninstall"), admin, nil).Status).To(Equal(http.StatusOK))
				r := call(http.MethodPost, connectionPath("acme", conn, "activate"), adminToken, nil)
				Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
				Expect(stateOf(ctx, conn)).To(Equal("ACTIVE"))
			}
		})

		It("still lets the workspace ADMIN activate an UNINSTALLED connection with a URL of its own (GitLab)", func(ctx SpecContext) {
			Expect(call(http.MethodPost, connectionPath("acme", id, "uninstall"), admin, nil).Status).To(Equal(http.StatusOK))
			Expect(call(http.MethodPost, connectionPath("acme", id, "activate"), admin, nil).Status).To(Equal(http.StatusOK))
			Expect(state(ctx)).To(Equal("ACTIVE"))
		})
	})

	It("answers 404 for a connection id that does not exist", func() {
		Expect(call(http.MethodPost, connectionPath("acme", id+100, "suspend"), adminToken, nil).Status).To(Equal(http.StatusNotFound))
		Expect(call(http.MethodPost, "/api/workspaces/acme/connections/abc/suspend", adminToken, nil).Status).To(Equal(http.StatusNotFound))
	})

	DescribeTable("waits for an open admission that holds the connection's row FOR SHARE",
		func(ctx SpecContext, method, rest string, body any, check func(ctx context.Context)) {
			tx, err := pool.Begin(ctx)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func(ctx SpecContext) { _ = tx.Rollback(ctx) })
			// What admission's LockConnections does: the scoped lifecycle lock on the row.
			_, err = tx.Exec(ctx, `SELECT id FROM connection WHERE id = $1 FOR SHARE`, id)
			Expect(err).NotTo(HaveOccurred())

			done, exited := make(chan response, 1), make(chan struct{})
			go func() {
				defer close(exited)
				defer GinkgoRecover()
				done <- call(method, connectionPath("acme", id, rest), adminToken, body)
			}()
			// Cleanups run last-in first-out: release the lock first, then the request can end.
			DeferCleanup(func(ctx SpecContext) {
				_ = tx.Rollback(ctx)
				Eventually(exited, 10*time.Second).Should(BeClosed())
			})

			By("waiting on the lock the admission holds, not merely being slow")
			support.EventuallyBlockedBy(ctx, pool, support.BackendPID(ctx, tx), 1)
			Expect(done).NotTo(Receive())

			Expect(tx.Commit(ctx)).To(Succeed())
			var r response
			Eventually(done, 5*time.Second).Should(Receive(&r))
			Expect(r.Status).To(Equal(http.StatusOK), r.Raw)
			check(ctx)
		},
		Entry("a suspension", http.MethodPost, "suspend", nil, func(ctx context.Context) {
			Expect(state(ctx)).To(Equal("SUSPENDED"))
		}),
		Entry("a subscription change", http.MethodPut, "subscriptions",
			map[string]any{"resources": []map[string]any{{"type": "project", "id": "7"}}}, func(ctx context.Context) {
				Expect(count(ctx, `SELECT count(*) FROM connection_subscription WHERE connection_id = $1`, id)).To(Equal(1))
			}),
	)
})

func connectionWebhook(id int64) string { return "/webhooks/gitlab/" + itoa(id) }
