package changes_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// The repositories an installation grants, through the installation handler (an instance
// inbox delivery writing into the connection's workspace).
var _ = Describe("Installation repositories in the change feed", func() {
	const installation = 957387
	h := withHandlers(activeConnection("GITHUB_APP", "GITHUB", "https://github.com", `{"installationId":957387}`, "957387"), githubPublishing)

	It("publishes a repository the installation grants once, nothing on redelivery or the same grant again, and its removal", func(ctx SpecContext) {
		added, _ := corpusPayload("installation_repositories/added.payload.json")
		d := support.LeasedEvent(ctx, writerPool, 0, github.Provider, "installation_repositories", "github:spec", string(added))
		Expect(d.Handle(ctx, h.reg)).To(Succeed())
		granted := `github.installation_repository.upserted github:installation_repository:957387:186853007 ` +
			`{"private": false, "removed": false, "fullName": "Codertocat/Space", "repositoryId": 186853007, "installationId": 957387}`
		Expect(h.published(ctx)).To(Equal([]string{granted}))

		d.NextLease(ctx)
		Expect(d.Handle(ctx, h.reg)).To(Succeed())
		again := support.LeasedEvent(ctx, writerPool, 0, github.Provider, "installation_repositories", "github:spec", string(added))
		Expect(again.Handle(ctx, h.reg)).To(Succeed())
		Expect(h.published(ctx)).To(Equal([]string{granted}))

		removed := ghBody(obj{"action": "removed", "installation": obj{"id": installation, "account": ghUser(21031067, "Codertocat"),
			"repository_selection": "selected", "updated_at": 1557933600},
			"repositories_added": []any{}, "repositories_removed": []any{obj{"id": 186853007, "name": "Space", "full_name": "Codertocat/Space", "private": false}}})
		Expect(support.LeasedEvent(ctx, writerPool, 0, github.Provider, "installation_repositories", "github:spec", removed).
			Handle(ctx, h.reg)).To(Succeed())
		Expect(h.published(ctx)).To(Equal([]string{granted,
			`github.installation_repository.deleted github:installation_repository:957387:186853007 ` +
				`{"private": false, "removed": true, "fullName": "Codertocat/Space", "repositoryId": 186853007, "installationId": 957387}`}))
	})
})
