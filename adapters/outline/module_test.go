package outline_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ = Describe("The Outline provider module", func() {
	module := outline.Module{}

	It("declares one kind with its own webhook URL and secret, and no source key", func() {
		Expect(module.Provider().String()).To(Equal("OUTLINE"))
		Expect(module.Kinds()).To(Equal([]connection.Kind{outline.Kind}))
		Expect(outline.Kind.HasWebhookURL()).To(BeTrue())
		Expect(outline.Kind.RequiresSecret()).To(BeTrue())
		Expect(outline.Kind.AcceptsAPIToken()).To(BeTrue(), "an Outline API key for the backfill")
		Expect(module.ResourceTypes()).To(ConsistOf("collection"))
		key, err := module.ValidateConfig(outline.Kind, map[string]any{})
		Expect(err).NotTo(HaveOccurred())
		Expect(key).To(BeEmpty())
	})

	It("refuses a kind of another provider", func() {
		other := connection.MustKind(connection.KindSpec{Name: "SLACK", Provider: provider.MustNew("SLACK")})
		_, err := module.ValidateConfig(other, map[string]any{})
		Expect(err).To(beRejected(ports.ErrMalformed, "unknown-kind"))
	})
})
