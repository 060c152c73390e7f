package inbox_test

import (
	"errors"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
)

var (
	t0      = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	github  = provider.MustNew("GITHUB")
	lease   = 2 * time.Minute
	policy  = mustPolicy(2*time.Second, 5*time.Minute, 10)
	subject = mustSubject("github", "repository", "1296269")
)

func mustPolicy(base, max time.Duration, attempts int) inbox.RetryPolicy {
	p, err := inbox.NewRetryPolicy(base, max, attempts)
	if err != nil {
		panic(err)
	}
	return p
}

func mustSubject(parts ...string) inbox.Subject {
	s, err := inbox.NewSubject(parts[0], parts[1], parts[2:]...)
	if err != nil {
		panic(err)
	}
	return s
}

func newDelivery() inbox.Delivery {
	d, err := inbox.NewDelivery(inbox.Admission{
		WorkspaceID: 7, Provider: github, EventType: "issues", DeliveryKey: "d-1", Subject: subject,
	}, t0)
	Expect(err).NotTo(HaveOccurred())
	return d
}

func claimed() inbox.Delivery {
	d := newDelivery()
	Expect(d.Claim(t0, lease)).To(Succeed())
	return d
}

var _ = Describe("Delivery", func() {
	Describe("admission", func() {
		It("starts QUEUED, due at arrival, with no attempt", func() {
			d := newDelivery()
			Expect(d.State()).To(Equal(inbox.Queued))
			Expect(d.DueAt()).To(Equal(t0))
			Expect(d.Attempt()).To(BeZero())
		})

		It("puts a work delivery in the scope of its workspace and subject, without the event token", func() {
			d := newDelivery()
			Expect(d.Scope().String()).To(Equal("ws:7:github:repository:1296269"))
			Expect(d.Scope().String()).NotTo(ContainSubstring("issues"))
			Expect(d.Scope().String()).NotTo(ContainSubstring("d-1"))
		})

		It("puts every installation control event in the one system scope, whatever it names", func() {
			a, err := inbox.NewDelivery(inbox.Admission{Provider: github, EventType: "installation",
				DeliveryKey: "a", Subject: mustSubject("github", "installation", "1"), Control: true}, t0)
			Expect(err).NotTo(HaveOccurred())
			b, err := inbox.NewDelivery(inbox.Admission{Provider: github, EventType: "installation_target",
				DeliveryKey: "b", Subject: mustSubject("github", "organization", "99"), Control: true}, t0)
			Expect(err).NotTo(HaveOccurred())
			Expect(a.Scope()).To(Equal(inbox.SystemScope()))
			Expect(b.Scope()).To(Equal(a.Scope()))
			Expect(a.IsInstallation()).To(BeTrue())
		})

		It("refuses a control event that names a workspace", func() {
			_, err := inbox.NewDelivery(inbox.Admission{WorkspaceID: 3, Provider: github, EventType: "installation",
				DeliveryKey: "a", Subject: subject, Control: true}, t0)
			Expect(err).To(HaveOccurred())
		})

		It("refuses a work event without a workspace, so it never falls into the system scope", func() {
			_, err := inbox.NewDelivery(inbox.Admission{Provider: github, EventType: "issues",
				DeliveryKey: "a", Subject: subject}, t0)
			Expect(err).To(HaveOccurred())
		})

		DescribeTable("refuses an incomplete admission",
			func(a inbox.Admission) {
				_, err := inbox.NewDelivery(a, t0)
				Expect(err).To(HaveOccurred())
			},
			Entry("no provider", inbox.Admission{WorkspaceID: 1, EventType: "e", DeliveryKey: "k", Subject: subject}),
			Entry("no event type", inbox.Admission{WorkspaceID: 1, Provider: github, DeliveryKey: "k", Subject: subject}),
			Entry("no delivery key", inbox.Admission{WorkspaceID: 1, Provider: github, EventType: "e", Subject: subject}),
			Entry("no subject", inbox.Admission{WorkspaceID: 1, Provider: github, EventType: "e", DeliveryKey: "k"}),
		)
	})

	Describe("claiming", func() {
		It("increments attempt and lease epoch and leases from now", func() {
			d := claimed()
			Expect(d.State()).To(Equal(inbox.Leased))
			Expect(d.Attempt()).To(Equal(1))
			Expect(d.Lease().Epoch()).To(Equal(inbox.Epoch(1)))
			Expect(d.Lease().Until()).To(Equal(t0.Add(lease)))
		})

		It("refuses a row that is not due yet", func() {
			d := claimed()
			_, err := d.Fail(1, inbox.Transient("read", errors.New("reset")), policy, t0)
			Expect(err).NotTo(HaveOccurred())
			Expect(d.Claim(t0, lease)).To(MatchError(inbox.ErrNotDue))
		})

		It("refuses to claim a leased row", func() {
			d := claimed()
			var te *inbox.TransitionError
			Expect(errors.As(d.Claim(t0, lease), &te)).To(BeTrue())
			Expect(te.From).To(Equal(inbox.Leased))
		})
	})

	Describe("outcomes under a lease", func() {
		It("completes as DONE with its end time", func() {
			d := claimed()
			Expect(d.Complete(1, t0.Add(time.Second))).To(Succeed())
			Expect(d.State()).To(Equal(inbox.Done))
			Expect(d.EndedAt()).To(Equal(t0.Add(time.Second)))
		})

		It("refuses a completion under a newer lease epoch", func() {
			d := claimed()
			Expect(d.Release(1, t0)).To(Succeed())
			Expect(d.Claim(t0, lease)).To(Succeed()) // epoch 2 now
			Expect(d.Complete(1, t0)).To(MatchError(inbox.ErrLeaseLost))
			Expect(d.State()).To(Equal(inbox.Leased))
		})

		It("refuses a renewal, release or failure under a newer lease epoch", func() {
			d := claimed()
			Expect(d.Release(1, t0)).To(Succeed())
			Expect(d.Claim(t0, lease)).To(Succeed())
			Expect(d.Renew(1, t0, lease)).To(MatchError(inbox.ErrLeaseLost))
			Expect(d.Release(1, t0)).To(MatchError(inbox.ErrLeaseLost))
			_, err := d.Fail(1, errors.New("x"), policy, t0)
			Expect(err).To(MatchError(inbox.ErrLeaseLost))
		})

		It("refuses any outcome once the row has ended", func() {
			d := claimed()
			Expect(d.Complete(1, t0)).To(Succeed())
			Expect(d.Complete(1, t0)).To(MatchError(inbox.ErrLeaseLost))
		})

		It("renews the lease under the same epoch and never shortens it", func() {
			d := claimed()
			Expect(d.Renew(1, t0.Add(30*time.Second), lease)).To(Succeed())
			Expect(d.Lease().Until()).To(Equal(t0.Add(30*time.Second + lease)))
			Expect(d.Renew(1, t0, time.Second)).To(Succeed())
			Expect(d.Lease().Until()).To(Equal(t0.Add(30*time.Second + lease)))
			Expect(d.Lease().Epoch()).To(Equal(inbox.Epoch(1)))
		})

		It("releases without counting the attempt", func() {
			d := claimed()
			Expect(d.Release(1, t0)).To(Succeed())
			Expect(d.State()).To(Equal(inbox.Queued))
			Expect(d.Attempt()).To(BeZero())
			Expect(d.Claim(t0, lease)).To(Succeed())
			Expect(d.Lease().Epoch()).To(Equal(inbox.Epoch(2)), "the epoch still moves forward")
		})
	})

	Describe("failures", func() {
		It("makes a row DEAD on its first attempt when a parsing error is anywhere in the chain", func() {
			d := claimed()
			cause := fmt.Errorf("handle issues: %w", inbox.ParsingFailure(errors.New("unexpected token")))
			dec, err := d.Fail(1, cause, policy, t0)
			Expect(err).NotTo(HaveOccurred())
			Expect(dec.Outcome()).To(Equal(inbox.OutcomeDead))
			Expect(d.State()).To(Equal(inbox.Dead))
			Expect(d.ErrorClass()).To(HavePrefix("PERMANENT:"))
		})

		It("retries a transient failure with bounded backoff and leaves the budget alone", func() {
			d := claimed()
			dec, err := d.Fail(1, fmt.Errorf("wrapped: %w", inbox.Transient("fetch", errors.New("reset"))), policy, t0)
			Expect(err).NotTo(HaveOccurred())
			Expect(dec.Outcome()).To(Equal(inbox.OutcomeRetried))
			Expect(d.State()).To(Equal(inbox.Queued))
			Expect(d.DueAt()).To(Equal(t0.Add(2 * time.Second)))
			Expect(d.UnknownFailures()).To(BeZero())
		})

		It("retries contention after a short delay, gives the attempt back and uses no budget", func() {
			d := claimed()
			dec, err := d.Fail(1, fmt.Errorf("step: %w", inbox.ErrBusy), policy, t0)
			Expect(err).NotTo(HaveOccurred())
			Expect(dec.Outcome()).To(Equal(inbox.OutcomeRetried))
			Expect(dec.Class()).To(Equal(inbox.Contention))
			Expect(dec.Cause()).To(Equal(inbox.CauseContention))
			Expect(d.DueAt()).To(BeTemporally(">=", t0.Add(inbox.ContentionBaseDelay/2)))
			Expect(d.DueAt()).To(BeTemporally("<=", t0.Add(inbox.ContentionBaseDelay)))
			Expect(d.Attempt()).To(BeZero())
			Expect(d.UnknownFailures()).To(BeZero())
		})

		It("retries unknown failures until the budget is used, then makes the row DEAD", func() {
			small := mustPolicy(time.Second, time.Minute, 3)
			d := newDelivery()
			now := t0
			var dec inbox.Decision
			for i := 1; i <= 3; i++ {
				Expect(d.Claim(now, lease)).To(Succeed())
				var err error
				dec, err = d.Fail(d.Lease().Epoch(), errors.New("boom"), small, now)
				Expect(err).NotTo(HaveOccurred())
				now = d.DueAt()
				if i < 3 {
					Expect(dec.Outcome()).To(Equal(inbox.OutcomeRetried), "attempt %d", i)
				}
			}
			Expect(dec.Outcome()).To(Equal(inbox.OutcomeDead))
			Expect(d.State()).To(Equal(inbox.Dead))
			Expect(d.UnknownFailures()).To(Equal(3))
			Expect(d.ErrorClass()).To(Equal("UNKNOWN:*errors.errorString"))
		})

		It("drops the work without a write when the event was erased", func() {
			d := claimed()
			dec, err := d.Fail(1, fmt.Errorf("write: %w", inbox.ErrErased), policy, t0)
			Expect(err).NotTo(HaveOccurred())
			Expect(dec.Outcome()).To(Equal(inbox.OutcomeDropped))
			Expect(dec.DropReason()).To(Equal("erased-during-processing"))
		})

		It("drops the work when the lease was lost during the handler", func() {
			d := claimed()
			dec, err := d.Fail(1, fmt.Errorf("commit: %w", inbox.ErrLeaseLost), policy, t0)
			Expect(err).NotTo(HaveOccurred())
			Expect(dec.Outcome()).To(Equal(inbox.OutcomeDropped))
			Expect(dec.DropReason()).To(Equal("lease-lost"))
		})
	})

	Describe("expiry", func() {
		It("hands an expired lease back to QUEUED and counts it against the budget", func() {
			d := claimed()
			dec, err := d.Expire(t0.Add(lease), policy)
			Expect(err).NotTo(HaveOccurred())
			Expect(dec.Outcome()).To(Equal(inbox.OutcomeRetried))
			Expect(d.State()).To(Equal(inbox.Queued))
			Expect(d.UnknownFailures()).To(Equal(1))
		})

		It("makes the row DEAD with LeaseExpired once its attempts are used", func() {
			small := mustPolicy(time.Second, time.Minute, 2)
			d := newDelivery()
			now := t0
			for i := 0; i < 2; i++ {
				Expect(d.Claim(now, lease)).To(Succeed())
				now = now.Add(lease)
				_, err := d.Expire(now, small)
				Expect(err).NotTo(HaveOccurred())
			}
			Expect(d.State()).To(Equal(inbox.Dead))
			Expect(d.ErrorClass()).To(Equal(inbox.LeaseExpiredClass))
		})

		It("refuses to expire a lease that has not run out", func() {
			d := claimed()
			_, err := d.Expire(t0.Add(time.Minute), policy)
			Expect(err).To(HaveOccurred())
			Expect(d.State()).To(Equal(inbox.Leased))
		})
	})

	Describe("replay", func() {
		dead := func() inbox.Delivery {
			d := claimed()
			_, err := d.Fail(1, inbox.ParsingFailure(errors.New("bad")), policy, t0)
			Expect(err).NotTo(HaveOccurred())
			return d
		}

		It("sets a DEAD row back to QUEUED with attempt 0, recording who and when", func() {
			d := dead()
			Expect(d.Replay(42, t0.Add(time.Hour))).To(Succeed())
			Expect(d.State()).To(Equal(inbox.Queued))
			Expect(d.Attempt()).To(BeZero())
			Expect(d.UnknownFailures()).To(BeZero())
			Expect(d.ReplayedBy()).To(Equal(int64(42)))
			Expect(d.ReplayedAt()).To(Equal(t0.Add(time.Hour)))
			Expect(d.DueAt()).To(Equal(t0.Add(time.Hour)))
			Expect(d.ErrorClass()).To(BeEmpty())
		})

		It("keeps the id and scope, so the row heads its scope again", func() {
			d := inbox.RestoreDelivery(inbox.Stored{ID: 9, WorkspaceID: 7, Provider: github, EventType: "issues",
				DeliveryKey: "k", Subject: subject.String(), ScopeKey: "ws:7:" + subject.String(), State: inbox.Dead,
				Attempt: 1, LeaseEpoch: 1, ReceivedAt: t0, DueAt: t0, EndedAt: t0, ErrorClass: "PERMANENT:x"})
			Expect(d.Replay(1, t0)).To(Succeed())
			Expect(d.ID()).To(Equal(int64(9)))
			Expect(d.Scope().String()).To(Equal("ws:7:" + subject.String()))
			Expect(d.Claim(t0, lease)).To(Succeed())
			Expect(d.Lease().Epoch()).To(Equal(inbox.Epoch(2)), "a replayed row gets a newer epoch than any earlier lease")
		})

		It("records the instance administrator's token, which has no account row, as account 0", func() {
			d := dead()
			Expect(d.Replay(0, t0)).To(Succeed())
			Expect(d.State()).To(Equal(inbox.Queued))
			Expect(d.ReplayedBy()).To(BeZero())
			Expect(d.ReplayedAt()).To(Equal(t0))
			other := dead()
			Expect(other.Replay(-1, t0)).To(HaveOccurred())
		})

		It("refuses to replay a row that is not DEAD", func() {
			d := claimed()
			var te *inbox.TransitionError
			Expect(errors.As(d.Replay(1, t0), &te)).To(BeTrue())
			Expect(d.State()).To(Equal(inbox.Leased))
		})
	})
})
