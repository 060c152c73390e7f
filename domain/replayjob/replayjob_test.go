package replayjob_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/domain/replayjob"
)

// installed stands for the providers a server runs.
var installed = []provider.Provider{provider.MustNew("GITHUB"), provider.MustNew("SLACK")}

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
		in := replayjob.FilterFields{Provider: "GITHUB", EventType: "issues", ErrorClass: "PERMANENT:*json.SyntaxError", DeadAfter: at}
		f, err := replayjob.NewFilter(in, installed)
		Expect(err).NotTo(HaveOccurred())
		Expect(f.Fields()).To(Equal(in))
	})

	DescribeTable("takes every error class a DEAD row can carry",
		func(class string) {
			_, err := replayjob.NewFilter(replayjob.FilterFields{ErrorClass: class}, installed)
			Expect(err).NotTo(HaveOccurred())
		},
		Entry("a payload failure", "PERMANENT:*json.SyntaxError"),
		Entry("a spent unknown-failure budget", "UNKNOWN:*errors.errorString"),
		Entry("a panic", "UNKNOWN:panic(runtime.boundsError)"),
		Entry("a transient class", "TRANSIENT:*net.OpError"),
		Entry("a contention class", "CONTENTION:*inbox.ContentionError"),
		Entry("the reaper's", "LeaseExpired"),
	)

	DescribeTable("names the field of a refused value",
		func(in replayjob.FilterFields, field string) {
			_, err := replayjob.NewFilter(in, installed)
			Expect(err).To(MatchError(&replayjob.FieldError{Field: field}))
		},
		Entry("a provider that is no provider name", replayjob.FilterFields{Provider: "github"}, "provider"),
		Entry("a provider name this server does not run", replayjob.FilterFields{Provider: "BITBUCKET"}, "provider"),
		Entry("an error class of no failure class", replayjob.FilterFields{ErrorClass: "FATAL:*json.SyntaxError"}, "errorClass"),
		Entry("an error class without its cause type", replayjob.FilterFields{ErrorClass: "PERMANENT"}, "errorClass"),
		Entry("an error class of the wrong case", replayjob.FilterFields{ErrorClass: "permanent:*json.SyntaxError"}, "errorClass"),
		Entry("an overlong event type", replayjob.FilterFields{EventType: strings.Repeat("e", replayjob.MaxText+1)}, "eventType"),
		Entry("an error class that is not UTF-8", replayjob.FilterFields{ErrorClass: "\xff"}, "errorClass"),
	)
})

var _ = Describe("A workspace's replay limits", func() {
	It("admit a start below the running jobs and up to the rows, and name the limit past either", func() {
		l, err := replayjob.NewLimits(2, 100)
		Expect(err).NotTo(HaveOccurred())
		Expect(l.AdmitRunning(1)).To(Succeed())
		Expect(l.AdmitRunning(2)).To(MatchError(&replayjob.LimitError{Limit: replayjob.LimitRunning, Max: 2}))
		Expect(l.AdmitRows(100)).To(Succeed())
		err = l.AdmitRows(101)
		Expect(err).To(MatchError(&replayjob.LimitError{Limit: replayjob.LimitRows, Max: 100}))
		Expect(err).To(MatchError(replayjob.ErrLimit))
	})

	It("are at least one job and one row", func() {
		for _, in := range [][2]int64{{0, 1}, {1, 0}, {-1, 5}} {
			_, err := replayjob.NewLimits(in[0], in[1])
			Expect(err).To(HaveOccurred(), "%v", in)
		}
	})
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
