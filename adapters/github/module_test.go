package github_test

import (
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ = Describe("The GitHub provider module", func() {
	module := github.Module{}

	It("declares an App kind and a PAT kind, neither with a webhook URL of its own", func() {
		Expect(module.Provider().String()).To(Equal("GITHUB"))
		Expect(module.Kinds()).To(HaveLen(2))
		Expect(github.KindApp.String()).To(Equal("GITHUB_APP"))
		Expect(github.KindPAT.String()).To(Equal("GITHUB_PAT"))
		for _, k := range module.Kinds() {
			Expect(k.Provider()).To(Equal(github.Provider))
			Expect(k.HasWebhookURL()).To(BeFalse())
		}
		Expect(github.KindApp.RequiresSecret()).To(BeFalse())
		Expect(module.ResourceTypes()).To(ConsistOf("organization", "repository"))
	})

	DescribeTable("takes an App's source key from its installation id",
		func(config map[string]any) {
			key, err := module.ValidateConfig(github.KindApp, config)
			Expect(err).NotTo(HaveOccurred())
			Expect(key).To(Equal("1001"))
		},
		Entry("a decoded JSON number", map[string]any{"installationId": float64(1001)}),
		Entry("a json.Number", map[string]any{"installationId": json.Number("1001")}),
		Entry("a decimal string", map[string]any{"installationId": "1001"}),
	)

	DescribeTable("refuses an App config without a usable installation id",
		func(config map[string]any) {
			_, err := module.ValidateConfig(github.KindApp, config)
			Expect(err).To(beRejected(ports.ErrMalformed, "invalid-config"))
		},
		Entry("missing", map[string]any{}),
		Entry("zero", map[string]any{"installationId": float64(0)}),
		Entry("fractional", map[string]any{"installationId": 10.5}),
		Entry("a word", map[string]any{"installationId": "acme"}),
	)

	It("gives a PAT connection no source key and requires its login", func() {
		key, err := module.ValidateConfig(github.KindPAT, map[string]any{"login": "octo-cat"})
		Expect(err).NotTo(HaveOccurred())
		Expect(key).To(BeEmpty())
		_, err = module.ValidateConfig(github.KindPAT, map[string]any{"login": "not a login"})
		Expect(err).To(beRejected(ports.ErrMalformed, "invalid-config"))
		_, err = module.ValidateConfig(github.KindPAT, map[string]any{})
		Expect(err).To(beRejected(ports.ErrMalformed, "invalid-config"))
	})

	It("refuses a kind of another provider", func() {
		other := connection.MustKind(connection.KindSpec{Name: "GITLAB", Provider: provider.MustNew("GITLAB"), WebhookURL: true, RequireSecret: true})
		_, err := module.ValidateConfig(other, map[string]any{"installationId": float64(1)})
		Expect(err).To(beRejected(ports.ErrMalformed, "unknown-kind"))
	})
})
