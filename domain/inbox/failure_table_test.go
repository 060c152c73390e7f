package inbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

// The classification table, row by row: each entry is a realistic error of the cause, wrapped
// the way adapters wrap it, and the spec checks the cause, the class, the budget and the delay
// the policy decides for it. Delays are measured on a row at its third attempt with two
// unknown failures used (budget 10), so backoff is base·2² = 8 s.
var _ = Describe("The failure table", func() {
	const attempt, used = 3, 2
	var (
		now     = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		backoff = 8 * time.Second
		pol     = mustPolicy(2*time.Second, 5*time.Minute, 10).
			WithJitter(func(d time.Duration) time.Duration { return d }) // the top of the range
	)

	decide := func(err error) inbox.Decision { return pol.Decide(err, attempt, used, now) }

	expectRow := func(err error, cause inbox.Cause, class inbox.FailureClass, counts bool) inbox.Decision {
		GinkgoHelper()
		Expect(inbox.CauseOf(err)).To(Equal(cause))
		Expect(inbox.Classify(err)).To(Equal(class))
		rule, ok := inbox.RuleOf(cause)
		Expect(ok).To(BeTrue())
		Expect(rule.Class).To(Equal(class))
		Expect(rule.CountsBudget).To(Equal(counts))
		dec := decide(err)
		Expect(dec.Cause()).To(Equal(cause))
		Expect(dec.Class()).To(Equal(class))
		Expect(dec.UsesBudget()).To(Equal(counts))
		return dec
	}

	It("has one row per cause, and every retry cause is a row", func() {
		seen := map[inbox.Cause]bool{}
		for _, r := range inbox.FailureTable() {
			Expect(seen[r.Cause]).To(BeFalse(), "cause %s twice", r.Cause)
			seen[r.Cause] = true
		}
		Expect(seen).To(HaveLen(11))
		for _, c := range inbox.RetryCauses() {
			Expect(seen[c]).To(BeTrue())
		}
		Expect(inbox.RetryCauses()).NotTo(ContainElement(inbox.CausePayload), "a permanent failure is never retried")
	})

	It("gives every cause a human sentence for operators, distinct per cause, and names each cause back", func() {
		sentences := map[string]inbox.Cause{}
		for _, r := range inbox.FailureTable() {
			s := r.Cause.Sentence()
			Expect(s).NotTo(BeEmpty(), "cause %s has no sentence", r.Cause)
			Expect(s).To(HaveSuffix("."))
			Expect(sentences).NotTo(HaveKey(s), "cause %s shares its sentence", r.Cause)
			sentences[s] = r.Cause
			named, ok := inbox.CauseNamed(r.Cause.String())
			Expect(ok).To(BeTrue())
			Expect(named).To(Equal(r.Cause))
		}
		_, ok := inbox.CauseNamed("*json.SyntaxError")
		Expect(ok).To(BeFalse())
		Expect(inbox.Cause{}.Sentence()).To(BeEmpty())
	})

	When("a SKIP LOCKED fence found a required row busy", func() {
		It("is expected contention: a short jittered delay that grows and stays well under a second, not counted", func() {
			err := fmt.Errorf("inbox step issue.upsert of event 7: %w", fmt.Errorf("%w: person erasure in progress", inbox.ErrBusy))
			dec := expectRow(err, inbox.CauseContention, inbox.Contention, false)
			Expect(dec.Outcome()).To(Equal(inbox.OutcomeRetried))
			Expect(dec.CountsAttempt()).To(BeFalse(), "the attempt is given back")

			var prev time.Duration
			for streak := range 12 {
				d := pol.DecideAfter(err, attempt, used, streak, now).DueAt().Sub(now)
				Expect(d).To(BeNumerically(">=", prev), "the delay grows with consecutive contention")
				Expect(d).To(BeNumerically("<=", inbox.ContentionMaxDelay))
				prev = d
			}
			Expect(inbox.ContentionMaxDelay).To(BeNumerically("<", 500*time.Millisecond))
			Expect(pol.DecideAfter(err, attempt, used, 0, now).DueAt().Sub(now)).To(Equal(inbox.ContentionBaseDelay))
			Expect(prev).To(Equal(inbox.ContentionMaxDelay))
		})

		It("jitters each wait within the upper half of its step", func() {
			random := mustPolicy(2*time.Second, 5*time.Minute, 10)
			seen := map[time.Duration]bool{}
			for range 50 {
				d := random.ContentionDelay(3)
				Expect(d).To(BeNumerically(">=", 100*time.Millisecond))
				Expect(d).To(BeNumerically("<=", 200*time.Millisecond))
				seen[d] = true
			}
			Expect(len(seen)).To(BeNumerically(">", 1))
		})
	})

	DescribeTable("database failures retry with bounded exponential delay and use no budget",
		func(err error, cause inbox.Cause) {
			dec := expectRow(err, cause, inbox.Retryable, false)
			Expect(dec.Outcome()).To(Equal(inbox.OutcomeRetried))
			Expect(dec.DueAt()).To(Equal(now.Add(backoff)))
			Expect(pol.Decide(err, 30, used, now).DueAt()).To(Equal(now.Add(5*time.Minute)), "bounded by the max delay")
			Expect(pol.Decide(err, 30, 9, now).Outcome()).To(Equal(inbox.OutcomeRetried), "never dead: no budget")
		},
		Entry("a lost connection", fmt.Errorf("claim step: %w", inbox.Transient("commit", errors.New("conn reset"))), inbox.CauseDatabaseTransport),
		Entry("a deadlock", fmt.Errorf("upsert: %w", inbox.DatabaseConflict("upsert", errors.New("sqlstate 40P01"))), inbox.CauseDatabaseConflict),
		Entry("a serialization failure", inbox.DatabaseConflict("upsert", errors.New("sqlstate 40001")), inbox.CauseDatabaseConflict),
		Entry("a lock timeout", inbox.DatabaseConflict("lock", errors.New("sqlstate 55P03")), inbox.CauseDatabaseConflict),
	)

	DescribeTable("provider transport failures, 5xx and rate limits wait for the later of backoff and the provider's wait, without budget",
		func(kind inbox.ProviderFailure, status int, cause inbox.Cause) {
			perr := &inbox.ProviderError{Provider: "github", Op: "GET /repos/o/r/check-runs", Kind: kind, Status: status}
			err := fmt.Errorf("read check runs: %w", perr)
			dec := expectRow(err, cause, inbox.Retryable, false)
			Expect(dec.DueAt()).To(Equal(now.Add(backoff)), "no wait asked: the backoff")

			perr.RetryAfter = 90 * time.Second
			Expect(decide(err).DueAt()).To(Equal(now.Add(90*time.Second)), "a later Retry-After or reset wins")
			perr.RetryAfter = time.Second
			Expect(decide(err).DueAt()).To(Equal(now.Add(backoff)), "an earlier one does not shorten the backoff")
			perr.RetryAfter = 40 * time.Minute
			Expect(decide(err).DueAt()).To(Equal(now.Add(40*time.Minute)), "the provider's wait may exceed the max delay")
			perr.RetryAfter = 30 * 24 * time.Hour
			Expect(decide(err).DueAt()).To(Equal(now.Add(time.Hour)), "but a misread reset parks a scope an hour at most")
			Expect(pol.Decide(err, 30, 9, now).Outcome()).To(Equal(inbox.OutcomeRetried))
		},
		Entry("no answer", inbox.ProviderTransport, 0, inbox.CauseProviderTransport),
		Entry("a 502", inbox.ProviderServerError, 502, inbox.CauseProviderTransport),
		Entry("a 429", inbox.ProviderRateLimited, 429, inbox.CauseProviderRateLimit),
		Entry("GitHub's rate-limit 403", inbox.ProviderRateLimited, 403, inbox.CauseProviderRateLimit),
	)

	DescribeTable("provider refusals and unreadable answers are unknown failures: counted, never permanent",
		func(err error, cause inbox.Cause) {
			dec := expectRow(err, cause, inbox.Unknown, true)
			Expect(dec.Outcome()).To(Equal(inbox.OutcomeRetried), "a valid delivery does not die on its first attempt")
			Expect(dec.DueAt()).To(Equal(now.Add(backoff)))
			last := pol.Decide(err, 10, 9, now)
			Expect(last.Outcome()).To(Equal(inbox.OutcomeDead), "the budget bounds it")
			Expect(last.ErrorClass()).To(HavePrefix("UNKNOWN:"))
		},
		Entry("a 401", &inbox.ProviderError{Provider: "github", Op: "GET /x", Kind: inbox.ProviderRefused, Status: 401}, inbox.CauseProviderRefused),
		Entry("a 422", fmt.Errorf("x: %w", &inbox.ProviderError{Provider: "gitlab", Op: "GET /x", Kind: inbox.ProviderRefused, Status: 422}), inbox.CauseProviderRefused),
		Entry("a proxy's HTML page", &inbox.ProviderError{Provider: "github", Op: "GET /x", Kind: inbox.ProviderUnreadable, Status: 200,
			Err: func() error { return json.Unmarshal([]byte("<html>"), &struct{}{}) }()}, inbox.CauseProviderUnreadable),
		Entry("an oversized answer", &inbox.ProviderError{Provider: "gitlab", Op: "GET /x", Kind: inbox.ProviderUnreadable, Status: 200,
			Err: errors.New("larger than the bound")}, inbox.CauseProviderUnreadable),
	)

	When("the stored payload does not parse", func() {
		It("is permanent: DEAD on the first attempt, no budget, no delay", func() {
			err := fmt.Errorf("decode issue: %w", inbox.ParsingFailure(json.Unmarshal([]byte(`{`), &struct{}{})))
			dec := expectRow(err, inbox.CausePayload, inbox.Permanent, false)
			Expect(pol.Decide(err, 1, 0, now).Outcome()).To(Equal(inbox.OutcomeDead))
			Expect(dec.ErrorClass()).To(Equal("PERMANENT:*json.SyntaxError"))
		})

		It("stays permanent when a provider error sits in the same chain", func() {
			err := errors.Join(&inbox.ProviderError{Kind: inbox.ProviderServerError, Status: 503}, inbox.ParsingFailure(errors.New("x")))
			Expect(inbox.CauseOf(err)).To(Equal(inbox.CausePayload))
		})
	})

	DescribeTable("panics and everything else are unknown: counted, bounded backoff",
		func(err error, cause inbox.Cause) {
			dec := expectRow(err, cause, inbox.Unknown, true)
			Expect(dec.DueAt()).To(Equal(now.Add(backoff)))
			Expect(pol.Decide(err, 10, 9, now).Outcome()).To(Equal(inbox.OutcomeDead))
		},
		Entry("a panic", &inbox.PanicError{ValueType: "runtime.boundsError"}, inbox.CausePanic),
		Entry("a plain error", errors.New("boom"), inbox.CauseUnknown),
		Entry("a handler timeout", context.DeadlineExceeded, inbox.CauseUnknown),
	)

	It("makes an expired lease an unknown failure due at once (the reaper's row)", func() {
		rule, ok := inbox.RuleOf(inbox.CauseLeaseExpired)
		Expect(ok).To(BeTrue())
		Expect(rule.Class).To(Equal(inbox.Unknown))
		Expect(rule.CountsBudget).To(BeTrue())
		Expect(rule.Delay).To(Equal(inbox.DelayAtOnce))
	})

	It("has no cause for a fence outcome, which drops the work instead", func() {
		Expect(inbox.CauseOf(fmt.Errorf("%w: %w", inbox.ErrErased, errors.New("x")))).To(BeZero())
		Expect(inbox.CauseOf(inbox.ErrLeaseLost)).To(BeZero())
	})
})

var _ = Describe("Fence rejections a handler met", func() {
	It("turn a nil from the handler into the rejection, erased before lease lost before busy", func() {
		var r inbox.FenceRejections
		Expect(r.Verdict(nil)).To(Succeed())
		r.Record(errors.New("not a fence rejection"))
		Expect(r.Verdict(nil)).To(Succeed())
		r.Record(fmt.Errorf("step: %w", inbox.ErrBusy))
		Expect(r.Verdict(nil)).To(MatchError(inbox.ErrBusy))
		r.Record(fmt.Errorf("step: %w", inbox.ErrLeaseLost))
		Expect(r.Verdict(nil)).To(MatchError(inbox.ErrLeaseLost))
		r.Record(fmt.Errorf("step: %w", inbox.ErrErased))
		Expect(r.Verdict(nil)).To(MatchError(inbox.ErrErased))
	})

	It("keep the handler's own error, unless an erasure or a lost lease must win over it", func() {
		var busy inbox.FenceRejections
		busy.Record(inbox.ErrBusy)
		boom := errors.New("boom")
		Expect(busy.Verdict(boom)).To(Equal(boom), "an unknown failure after contention still uses the budget")

		var erased inbox.FenceRejections
		erased.Record(inbox.ErrErased)
		Expect(inbox.Classify(erased.Verdict(boom))).To(Equal(inbox.Erased))
	})

	It("are nothing without a recorder", func() {
		var r *inbox.FenceRejections
		r.Record(inbox.ErrBusy)
		Expect(r.Verdict(nil)).To(Succeed())
	})
})

var _ = Describe("An error class as a filter value", func() {
	It("is what a row records: a failure class that writes an outcome, a colon and a cause, or the reaper's class", func() {
		Expect(inbox.IsErrorClass(inbox.ErrorClass(errors.New("plain")))).To(BeTrue())
		Expect(inbox.IsErrorClass(inbox.LeaseExpiredClass)).To(BeTrue())
		Expect(inbox.IsErrorClass("PERMANENT:*json.SyntaxError")).To(BeTrue())
		for _, s := range []string{"", "PERMANENT", "PERMANENT:", "FATAL:*x", "X", "permanent:*x", ":x", "LEASE_LOST:*inbox.leaseLostError", "ERASED:*x"} {
			Expect(inbox.IsErrorClass(s)).To(BeFalse(), s)
		}
	})
})
