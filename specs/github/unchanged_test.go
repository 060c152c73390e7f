package github_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmodel"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ = Describe("Natural-key upserts at an equal version", func() {
	When("an issues delivery is retried after its users and labels committed", func() {
		It("writes no new row version of the user and the label it already stored", func(ctx SpecContext) {
			ws := newWorkspace(ctx, "acme")
			reg := registry(githubhandlers.Deps{})
			d := leased(ctx, ws, "issues", body(obj{
				"action": "edited", "issue": issue(9100, 3, "Same again", "2024-02-02T00:00:00Z"),
				"repository": repository(4242, "acme/app", 77),
			}))
			Expect(d.handle(ctx, reg)).To(Succeed())
			userRow := xmin(ctx, "github_user", "workspace_id = $1 AND id = 7", ws)
			labelRow := xmin(ctx, "github_label", "workspace_id = $1 AND id = 501", ws)

			d.retry(ctx)
			Expect(d.handle(ctx, reg)).To(Succeed())

			Expect(xmin(ctx, "github_user", "workspace_id = $1 AND id = 7", ws)).To(Equal(userRow),
				"the same event's user, identical at the same version, is not written again")
			Expect(xmin(ctx, "github_label", "workspace_id = $1 AND id = 501", ws)).To(Equal(labelRow),
				"the same event's label, identical at the same version, is not written again")
		})
	})

	When("a write at the stored version differs from the stored row", func() {
		It("still applies it, as a write at an equal version always did", func(ctx SpecContext) {
			ws := newWorkspace(ctx, "acme")
			write := func(login string) {
				GinkgoHelper()
				Expect(box.Write(ctx, func(ctx context.Context, tx ports.Tx) error {
					return store.UpsertUsers(ctx, tx, ws, []githubmodel.User{{ID: 8, Login: login, Type: "User",
						Version: githubmodel.Version{UpdatedAt: time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)}}})
				})).To(Succeed())
			}
			write("hubot")
			before := xmin(ctx, "github_user", "workspace_id = $1 AND id = 8", ws)
			write("hubot")
			Expect(xmin(ctx, "github_user", "workspace_id = $1 AND id = 8", ws)).To(Equal(before))
			write("hubot-renamed")
			Expect(scalar[string](ctx, `SELECT login FROM github_user WHERE workspace_id = $1 AND id = 8`, ws)).
				To(Equal("hubot-renamed"))
		})
	})
})
