package github_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubhandlers"
)

var _ = Describe("Installation lifecycle", func() {
	const installationID = 4711
	var ws, conn int64

	BeforeEach(func(ctx SpecContext) {
		ws = newWorkspace(ctx, "acme")
		conn = appConnection(ctx, ws, installationID, "ACTIVE")
	})

	// deliver handles an installation event on the instance inbox (no workspace).
	deliver := func(ctx SpecContext, action string, updatedAt int64) *delivery {
		d := leased(ctx, 0, "installation", installationBody(action, installationID, updatedAt))
		Expect(d.handle(ctx, registry(githubhandlers.Deps{}))).To(Succeed())
		return d
	}

	It("moves the App connection through suspend, unsuspend and deleted", func(ctx SpecContext) {
		d := deliver(ctx, "suspend", 1_700_000_100)
		Expect(connectionState(ctx, conn)).To(Equal("SUSPENDED"))
		Expect(d.steps(ctx)).To(Equal([]string{"installation.upsert"}))

		deliver(ctx, "unsuspend", 1_700_000_200)
		Expect(connectionState(ctx, conn)).To(Equal("ACTIVE"))

		deliver(ctx, "deleted", 1_700_000_300)
		Expect(connectionState(ctx, conn)).To(Equal("UNINSTALLED"))
	})

	It("repairs a SUSPENDED connection of its installation on created, and records what it covers", func(ctx SpecContext) {
		deliver(ctx, "suspend", 1_700_000_100)
		deliver(ctx, "created", 1_700_000_400)
		Expect(connectionState(ctx, conn)).To(Equal("ACTIVE"))
		Expect(scalar[int](ctx, `SELECT count(*) FROM github_installation_repository
			WHERE workspace_id = $1 AND installation_id = $2 AND repository_id = 1001 AND NOT deleted`, ws, installationID)).To(Equal(1))
		Expect(scalar[string](ctx, `SELECT state FROM github_installation WHERE installation_id = $1`, installationID)).To(Equal("ACTIVE"))
	})

	It("never revives an UNINSTALLED connection: a reinstall is bound again only by the install flow or the instance administrator", func(ctx SpecContext) {
		globex := newWorkspace(ctx, "globex")
		older := appConnection(ctx, globex, installationID, "UNINSTALLED")
		deliver(ctx, "deleted", 1_700_000_300)
		Expect(connectionState(ctx, conn)).To(Equal("UNINSTALLED"))
		// conn is now the most recently changed UNINSTALLED connection of the installation.
		deliver(ctx, "created", 1_700_000_400)
		deliver(ctx, "unsuspend", 1_700_000_500)
		Expect(connectionState(ctx, conn)).To(Equal("UNINSTALLED"))
		Expect(connectionState(ctx, older)).To(Equal("UNINSTALLED"))
		Expect(scalar[int](ctx, `SELECT count(*) FROM github_installation_repository WHERE NOT deleted`)).To(BeZero())
		Expect(scalar[bool](ctx, `SELECT connection_id IS NULL FROM github_installation WHERE installation_id = $1`, installationID)).
			To(BeTrue(), "the record names no connection")
		Expect(scalar[string](ctx, `SELECT state FROM github_installation WHERE installation_id = $1`, installationID)).To(Equal("ACTIVE"))
	})

	It("repairs only its own installation's connection", func(ctx SpecContext) {
		globex := newWorkspace(ctx, "globex")
		other := appConnection(ctx, globex, installationID+1, "SUSPENDED")
		deliver(ctx, "suspend", 1_700_000_100)
		deliver(ctx, "unsuspend", 1_700_000_200)
		Expect(connectionState(ctx, conn)).To(Equal("ACTIVE"))
		Expect(connectionState(ctx, other)).To(Equal("SUSPENDED"))
	})

	It("does not let an older suspension, delivered late, suspend the connection again", func(ctx SpecContext) {
		deliver(ctx, "unsuspend", 1_700_000_200)
		deliver(ctx, "suspend", 1_700_000_100)
		Expect(connectionState(ctx, conn)).To(Equal("ACTIVE"))
	})

	It("records an installation that has no connection to repair", func(ctx SpecContext) {
		d := leased(ctx, 0, "installation", installationBody("created", 999, 1_700_000_000))
		Expect(d.handle(ctx, registry(githubhandlers.Deps{}))).To(Succeed())

		Expect(scalar[bool](ctx, `SELECT connection_id IS NULL FROM github_installation WHERE installation_id = 999`)).To(BeTrue())
		Expect(scalar[int](ctx, `SELECT count(*) FROM connection`)).To(Equal(1))
		Expect(connectionState(ctx, conn)).To(Equal("ACTIVE"))
	})

	It("records a renamed installation account", func(ctx SpecContext) {
		deliver(ctx, "created", 1_700_000_400)
		d := leased(ctx, 0, "installation_target", body(obj{
			"action": "renamed", "target_type": "Organization", "installation": obj{"id": installationID},
			"account": user(99, "acme-renamed"), "changes": obj{"login": obj{"from": "acme-org"}},
		}))
		Expect(d.handle(ctx, registry(githubhandlers.Deps{}))).To(Succeed())
		Expect(scalar[string](ctx, `SELECT account_login FROM github_installation WHERE installation_id = $1`, installationID)).
			To(Equal("acme-renamed"))
		Expect(d.steps(ctx)).To(Equal([]string{"installation_target.upsert"}))
	})

	It("updates the repositories an installation covers", func(ctx SpecContext) {
		d := leased(ctx, 0, "installation_repositories", body(obj{
			"action":               "removed",
			"installation":         obj{"id": installationID, "account": user(99, "acme-org"), "updated_at": 1_700_000_000},
			"repository_selection": "selected",
			"repositories_added":   []any{obj{"id": 2002, "full_name": "acme-org/new", "private": true}},
			"repositories_removed": []any{obj{"id": 1001, "full_name": "acme-org/hello", "private": false}},
		}))
		Expect(d.handle(ctx, registry(githubhandlers.Deps{}))).To(Succeed())
		Expect(scalar[int](ctx, `SELECT count(*) FROM github_installation_repository
			WHERE workspace_id = $1 AND repository_id = 2002 AND NOT deleted`, ws)).To(Equal(1))
		Expect(scalar[int](ctx, `SELECT count(*) FROM github_installation_repository
			WHERE workspace_id = $1 AND repository_id = 1001 AND deleted`, ws)).To(Equal(1))
	})
})
