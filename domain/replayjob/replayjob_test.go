package replayjob_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/domain/replayjob"
)

func TestReplayJob(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Replay job domain")
}

var _ = Describe("A replay job's counts", func() {
	It("count each looked-at row once, as replayed or skipped", func() {
		p, err := replayjob.Progress{Matched: 10}.Add(4, 3)
		Expect(err).NotTo(HaveOccurred())
		p, err = p.Add(6, 6)
		Expect(err).NotTo(HaveOccurred())
		Expect(p).To(Equal(replayjob.Progress{Matched: 10, Replayed: 9, Skipped: 1}))
	})

	It("refuse a batch that looks at more rows than remain, or replays more than it looked at", func() {
		_, err := replayjob.Progress{Matched: 5, Replayed: 4}.Add(2, 0)
		Expect(err).To(HaveOccurred())
		_, err = replayjob.Progress{Matched: 5}.Add(1, 2)
		Expect(err).To(HaveOccurred())
		_, err = replayjob.Progress{Matched: 5}.Add(1, -1)
		Expect(err).To(HaveOccurred())
	})
})

var _ = Describe("A replay filter", func() {
	It("keeps what it was given", func() {
		at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		f, err := replayjob.NewFilter(replayjob.FilterFields{Provider: "GITHUB", EventType: "issues", DeadAfter: at})
		Expect(err).NotTo(HaveOccurred())
		Expect(f.Fields()).To(Equal(replayjob.FilterFields{Provider: "GITHUB", EventType: "issues", DeadAfter: at}))
	})

	DescribeTable("names the field of a refused value",
		func(in replayjob.FilterFields, field string) {
			_, err := replayjob.NewFilter(in)
			Expect(err).To(MatchError(&replayjob.FieldError{Field: field}))
		},
		Entry("a provider that is no provider name", replayjob.FilterFields{Provider: "github"}, "provider"),
		Entry("an overlong event type", replayjob.FilterFields{EventType: strings.Repeat("e", replayjob.MaxText+1)}, "eventType"),
		Entry("an error class that is not UTF-8", replayjob.FilterFields{ErrorClass: "\xff"}, "errorClass"),
	)
})

var _ = Describe("A replay job's state", func() {
	It("is one of the four the contract names, and only RUNNING has more to do", func() {
		for _, s := range []replayjob.State{replayjob.Running, replayjob.Done, replayjob.Cancelled, replayjob.Failed} {
			parsed, err := replayjob.ParseState(s.String())
			Expect(err).NotTo(HaveOccurred())
			Expect(parsed).To(Equal(s))
			Expect(s.Ended()).To(Equal(s != replayjob.Running))
		}
		_, err := replayjob.ParseState("PAUSED")
		Expect(err).To(HaveOccurred())
	})
})
