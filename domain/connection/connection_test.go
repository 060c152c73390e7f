package connection_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
)

func TestConnection(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Connection domain")
}

var _ = Describe("Connection lifecycle", func() {
	DescribeTable("allows the transitions of the state machine",
		func(from connection.State, action connection.Action, to connection.State) {
			next, err := from.Next(action)
			Expect(err).NotTo(HaveOccurred())
			Expect(next).To(Equal(to))
		},
		Entry("suspend an active connection", connection.Active, connection.Suspend, connection.Suspended),
		Entry("activate a suspended connection", connection.Suspended, connection.Activate, connection.Active),
		Entry("uninstall an active connection", connection.Active, connection.Uninstall, connection.Uninstalled),
		Entry("uninstall a suspended connection", connection.Suspended, connection.Uninstall, connection.Uninstalled),
		Entry("repair an uninstalled connection by activating it", connection.Uninstalled, connection.Activate, connection.Active),
	)

	DescribeTable("forbids every other transition",
		func(from connection.State, action connection.Action) {
			_, err := from.Next(action)
			Expect(err).To(MatchError(connection.ErrForbiddenTransition))
		},
		Entry("activate an active connection", connection.Active, connection.Activate),
		Entry("suspend a suspended connection", connection.Suspended, connection.Suspend),
		Entry("suspend an uninstalled connection", connection.Uninstalled, connection.Suspend),
		Entry("uninstall an uninstalled connection", connection.Uninstalled, connection.Uninstall),
	)

	It("admits deliveries only while ACTIVE", func() {
		Expect(connection.Active.Admits()).To(BeTrue())
		Expect(connection.Suspended.Admits()).To(BeFalse())
		Expect(connection.Uninstalled.Admits()).To(BeFalse())
		Expect(connection.State{}.Admits()).To(BeFalse())
	})

	It("reads only the states it knows", func() {
		s, err := connection.ParseState("SUSPENDED")
		Expect(err).NotTo(HaveOccurred())
		Expect(s).To(Equal(connection.Suspended))
		_, err = connection.ParseState("PAUSED")
		Expect(err).To(HaveOccurred())
	})
})

var _ = Describe("Connection kinds", func() {
	gitlab := provider.MustNew("GITLAB")

	It("lets a provider adapter declare a kind without touching the domain", func() {
		k, err := connection.NewKind(connection.KindSpec{Name: "GITLAB", Provider: gitlab, WebhookURL: true, RequireSecret: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(k.Provider()).To(Equal(gitlab))
		Expect(k.HasWebhookURL()).To(BeTrue())
	})

	It("refuses a kind that posts to its own URL without a secret to verify it", func() {
		_, err := connection.NewKind(connection.KindSpec{Name: "GITLAB", Provider: gitlab, WebhookURL: true})
		Expect(err).To(HaveOccurred())
	})

	It("refuses a kind without a provider or with a malformed name", func() {
		_, err := connection.NewKind(connection.KindSpec{Name: "GITLAB"})
		Expect(err).To(HaveOccurred())
		_, err = connection.NewKind(connection.KindSpec{Name: "git lab", Provider: gitlab})
		Expect(err).To(HaveOccurred())
	})
})

var _ = Describe("Providers", func() {
	It("accepts upper-case names and derives the lower-case label", func() {
		p, err := provider.New("OUTLINE")
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Label()).To(Equal("outline"))
	})

	It("refuses malformed names", func() {
		for _, n := range []string{"", "github", "GIT HUB", "X"} {
			_, err := provider.New(n)
			Expect(err).To(HaveOccurred(), n)
		}
	})
})

var _ = Describe("Subscription access", func() {
	It("routes deliveries only when VERIFIED", func() {
		Expect(connection.Verified.Routes()).To(BeTrue())
		Expect(connection.Unverified.Routes()).To(BeFalse())
		Expect(connection.Revoked.Routes()).To(BeFalse())
		Expect(connection.Access{}.Routes()).To(BeFalse())
	})

	It("reads only the access states it knows", func() {
		for _, a := range []connection.Access{connection.Verified, connection.Unverified, connection.Revoked} {
			got, err := connection.ParseAccess(a.String())
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(Equal(a))
		}
		_, err := connection.ParseAccess("verified")
		Expect(err).To(HaveOccurred())
	})
})
