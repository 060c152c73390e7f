package gitlab_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/gitlab"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ = Describe("The GitLab provider module", func() {
	module := gitlab.Module{}

	It("declares one kind with its own webhook URL and secret", func() {
		Expect(module.Provider().String()).To(Equal("GITLAB"))
		Expect(module.Kinds()).To(Equal([]connection.Kind{gitlab.Kind}))
		Expect(gitlab.Kind.String()).To(Equal("GITLAB"))
		Expect(gitlab.Kind.HasWebhookURL()).To(BeTrue())
		Expect(gitlab.Kind.RequiresSecret()).To(BeTrue())
		Expect(module.ResourceTypes()).To(ConsistOf("group", "project"))
	})

	It("accepts a config with or without a group and gives no source key", func() {
		for _, config := range []map[string]any{{"groupId": float64(42)}, {"groupId": "42"}, {}} {
			key, err := module.ValidateConfig(gitlab.Kind, config)
			Expect(err).NotTo(HaveOccurred())
			Expect(key).To(BeEmpty())
		}
	})

	It("refuses a group id that is not a positive integer", func() {
		_, err := module.ValidateConfig(gitlab.Kind, map[string]any{"groupId": "acme"})
		Expect(err).To(beRejected(ports.ErrMalformed, "invalid-config"))
	})

	It("refuses a kind of another provider", func() {
		other := connection.MustKind(connection.KindSpec{Name: "OUTLINE", Provider: provider.MustNew("OUTLINE"), WebhookURL: true, RequireSecret: true})
		_, err := module.ValidateConfig(other, map[string]any{})
		Expect(err).To(beRejected(ports.ErrMalformed, "unknown-kind"))
	})
})
