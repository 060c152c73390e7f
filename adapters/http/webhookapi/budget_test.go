package webhookapi

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestWebhookAPI(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Webhook body budget")
}

var _ = Describe("The webhook body budget's shares", func() {
	It("defaults to the numbers docs/configuration.md and docs/admission.md give", func() {
		b, err := NewSharedBudget(BudgetConfig{MaxBody: DefaultMaxBytes})
		Expect(err).NotTo(HaveOccurred())
		Expect(b.Config()).To(Equal(BudgetConfig{
			Limit:          64 << 20,
			MaxBody:        DefaultMaxBytes,
			Headroom:       16 << 20,
			ClientShare:    16<<20 + DefaultMaxBytes + 1, // the 16 MiB buffer and the 25 MiB one during the last copy: 41 MiB
			ClientHeadroom: 2 << 20,
		}))
		Expect(peakReservation(DefaultMaxBytes)).To(BeNumerically("<=", b.Config().Limit-b.Config().Headroom),
			"the largest body fits beside the headroom")
	})

	It("keeps a client within its share, large requests out of the headroom, and the headroom for clients holding little", func() {
		b, err := NewSharedBudget(BudgetConfig{Limit: 1 << 20, Headroom: 256 << 10, ClientShare: 512 << 10, ClientHeadroom: 128 << 10})
		Expect(err).NotTo(HaveOccurred())
		// One client: up to its share, not beyond.
		Expect(b.take("a", 0, 512<<10)).To(BeTrue())
		Expect(b.take("a", 0, 1)).To(BeFalse(), "past a's share")
		// Another fills the rest of the shared part (768 KiB) with a large request.
		Expect(b.take("b", 0, 256<<10)).To(BeTrue())
		Expect(b.take("b", 256<<10, 64<<10)).To(BeFalse(), "a large request never enters the headroom")
		// The headroom: small requests of clients holding little.
		Expect(b.take("b", 0, 32<<10)).To(BeFalse(), "b holds more than the client headroom")
		Expect(b.take("c", 0, 32<<10)).To(BeTrue())
		Expect(b.take("c", 32<<10, 64<<10)).To(BeTrue(), "still a small request")
		Expect(b.take("c", 96<<10, 64<<10)).To(BeFalse(), "no longer a small one")
		Expect(b.HeldBy("c")).To(BeEquivalentTo(96 << 10))
		b.give("c", 96<<10)
		b.give("a", 512<<10)
		Expect(b.HeldBy("a")).To(BeZero())
		Expect(b.Held()).To(BeEquivalentTo(256 << 10))
	})

	It("names a client by its address, an IPv6 client by its /64", func() {
		Expect(ClientOf("192.0.2.7:4711")).To(Equal("192.0.2.7"))
		Expect(ClientOf("[::ffff:192.0.2.7]:4711")).To(Equal("192.0.2.7"))
		Expect(ClientOf("[2001:db8:1:2:3:4:5:6]:443")).To(Equal(ClientOf("[2001:db8:1:2:ffff::1]:80")))
		Expect(ClientOf("[2001:db8:1:2:3:4:5:6]:443")).NotTo(Equal(ClientOf("[2001:db8:1:3::1]:443")))
	})
})
