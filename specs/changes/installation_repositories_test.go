package changes_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubread"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/domain/change"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// The repositories an installation grants, through the installation handler (an instance
// inbox delivery writing into the connection's workspace).
var _ = Describe("Installation repositories in the change feed", func() {
	const installation = 957387
	var (
		ws   int64
		feed *changefeed.Store
		reg  *consumer.Registry
	)

	BeforeEach(func(ctx SpecContext) {
		ws = support.Workspace(ctx, writerPool, "acme")
		_, err := writerPool.Exec(ctx, `
			INSERT INTO connection (workspace_id, kind, provider, state, source_server_url, config, source_key)
			VALUES ($1, 'GITHUB_APP', 'GITHUB', 'ACTIVE', 'https://github.com', jsonb_build_object('installationId', $2::bigint), $2::text)`,
			ws, installation)
		Expect(err).NotTo(HaveOccurred())
		feed, err = changefeed.New(writerPool, nil)
		Expect(err).NotTo(HaveOccurred())
		store, err := githubmirror.New(writerPool)
		Expect(err).NotTo(HaveOccurred())
		Expect(store.PublishChanges(versionChecked(feed), githubread.Views{})).To(Succeed())
		box, err := deliveryinbox.New(writerPool)
		Expect(err).NotTo(HaveOccurred())
		reg = consumer.NewRegistry()
		Expect(githubhandlers.Register(reg, githubhandlers.Deps{Inbox: box, Store: store, Log: support.Logger{}})).To(Succeed())
	})

	published := func(ctx context.Context) []string {
		GinkgoHelper()
		cs, err := feed.Changes(ctx, ws, change.Cursor{}, 100)
		Expect(err).NotTo(HaveOccurred())
		out := []string{}
		for _, c := range cs {
			out = append(out, c.Type+" "+c.Subject+" "+string(entity(c.Data)))
		}
		return out
	}

	It("publishes a repository the installation grants once, nothing on redelivery or the same grant again, and its removal", func(ctx SpecContext) {
		added, _ := corpusPayload("installation_repositories/added.payload.json")
		d := support.LeasedEvent(ctx, writerPool, 0, github.Provider, "installation_repositories", "github:spec", string(added))
		Expect(d.Handle(ctx, reg)).To(Succeed())
		granted := `github.installation_repository.upserted github:installation_repository:957387:186853007 ` +
			`{"private": false, "removed": false, "fullName": "Codertocat/Space", "repositoryId": 186853007, "installationId": 957387}`
		Expect(published(ctx)).To(Equal([]string{granted}))

		d.NextLease(ctx)
		Expect(d.Handle(ctx, reg)).To(Succeed())
		again := support.LeasedEvent(ctx, writerPool, 0, github.Provider, "installation_repositories", "github:spec", string(added))
		Expect(again.Handle(ctx, reg)).To(Succeed())
		Expect(published(ctx)).To(Equal([]string{granted}))

		removed := ghBody(obj{"action": "removed", "installation": obj{"id": installation, "account": ghUser(21031067, "Codertocat"),
			"repository_selection": "selected", "updated_at": 1557933600},
			"repositories_added": []any{}, "repositories_removed": []any{obj{"id": 186853007, "name": "Space", "full_name": "Codertocat/Space", "private": false}}})
		Expect(support.LeasedEvent(ctx, writerPool, 0, github.Provider, "installation_repositories", "github:spec", removed).
			Handle(ctx, reg)).To(Succeed())
		Expect(published(ctx)).To(Equal([]string{granted,
			`github.installation_repository.deleted github:installation_repository:957387:186853007 ` +
				`{"private": false, "removed": true, "fullName": "Codertocat/Space", "repositoryId": 186853007, "installationId": 957387}`}))
	})
})
