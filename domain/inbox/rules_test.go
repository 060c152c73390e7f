package inbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

var _ = Describe("Step names", func() {
	It("accepts a fixed operation name for a single-step event", func() {
		s, err := inbox.NewStep("issue.upsert")
		Expect(err).NotTo(HaveOccurred())
		Expect(s.String()).To(Equal("issue.upsert"))
	})

	It("names a loop step by stable item ids, such as repository id and commit SHA", func() {
		s, err := inbox.NewStep("push.commit", "1296269", "6dcb09b5b57875f334f61aebed695e2e4193db5e")
		Expect(err).NotTo(HaveOccurred())
		Expect(s.String()).To(Equal("push.commit/1296269/6dcb09b5b57875f334f61aebed695e2e4193db5e"))
	})

	DescribeTable("refuses names that are not stable operation names or ids",
		func(op string, items ...string) {
			_, err := inbox.NewStep(op, items...)
			Expect(err).To(MatchError(inbox.ErrInvalidStepName))
		},
		Entry("an empty operation", ""),
		Entry("an upper-case operation", "Issue.Upsert"),
		Entry("free text", "update the issue"),
		Entry("an item with a separator", "push.commit", "a/b"),
		Entry("an empty item", "push.commit", ""),
		Entry("an over-long operation", strings.Repeat("a", 65)),
		Entry("an over-long item", "push.commit", strings.Repeat("a", 97)),
	)

	It("refuses an item the provider's rule declares personal, and only with that rule", func() {
		personal := func(item string) bool { return strings.HasPrefix(item, "secret") }
		_, err := inbox.NewStepOf(personal, "message.insert", "secret-42")
		Expect(err).To(MatchError(inbox.ErrInvalidStepName))
		s, err := inbox.NewStepOf(personal, "message.insert", "public-42")
		Expect(err).NotTo(HaveOccurred())
		Expect(s.String()).To(Equal("message.insert/public-42"))
		_, err = inbox.NewStep("message.insert", "secret-42")
		Expect(err).NotTo(HaveOccurred(), "without a rule the item is an ordinary id")
	})

	It("refuses a name longer than the bound even when every part is valid", func() {
		items := []string{strings.Repeat("a", 90), strings.Repeat("b", 90), strings.Repeat("c", 90)}
		_, err := inbox.NewStep("push.commit", items...)
		Expect(err).To(MatchError(inbox.ErrInvalidStepName))
	})
})

var _ = Describe("Failure classification", func() {
	DescribeTable("classifies through the whole wrapped chain",
		func(err error, class inbox.FailureClass) {
			Expect(inbox.Classify(err)).To(Equal(class))
		},
		Entry("a wrapped parsing error", fmt.Errorf("a: %w", fmt.Errorf("b: %w", inbox.ParsingFailure(errors.New("x")))), inbox.Permanent),
		Entry("a parsing error joined with another", errors.Join(errors.New("other"), inbox.ParsingFailure(errors.New("x"))), inbox.Permanent),
		Entry("a wrapped transient error", fmt.Errorf("a: %w", inbox.Transient("fetch", errors.New("reset"))), inbox.Retryable),
		Entry("busy", fmt.Errorf("step: %w", inbox.ErrBusy), inbox.Contention),
		Entry("erased wins over parsing", fmt.Errorf("%w: %w", inbox.ErrErased, inbox.ParsingFailure(errors.New("x"))), inbox.Erased),
		Entry("lease lost wins over transient", fmt.Errorf("%w: %w", inbox.ErrLeaseLost, inbox.Transient("x", errors.New("y"))), inbox.LeaseLost),
		Entry("a panic", &inbox.PanicError{ValueType: "runtime.Error"}, inbox.Unknown),
		Entry("anything else", errors.New("boom"), inbox.Unknown),
		Entry("a deadline", context.DeadlineExceeded, inbox.Unknown),
	)

	It("records the class and the innermost cause type, never the message", func() {
		var syntax *json.SyntaxError
		err := json.Unmarshal([]byte(`{"token":"ghp_secret"`), &map[string]any{})
		Expect(errors.As(err, &syntax)).To(BeTrue())
		class := inbox.ErrorClass(fmt.Errorf("decode with token ghp_secret: %w", inbox.ParsingFailure(err)))
		Expect(class).To(Equal("PERMANENT:*json.SyntaxError"))
		Expect(class).NotTo(ContainSubstring("ghp_secret"))
	})

	It("names a recovered panic by the type of its value", func() {
		Expect(inbox.ErrorClass(&inbox.PanicError{ValueType: "runtime.boundsError"})).To(Equal("UNKNOWN:panic(runtime.boundsError)"))
	})

	It("lists sanitized cause types from the outside in", func() {
		err := fmt.Errorf("outer: %w", inbox.Transient("op", context.DeadlineExceeded))
		Expect(inbox.CauseTypes(err)).To(Equal([]string{"*fmt.wrapError", "*inbox.TransientError", "context.DeadlineExceeded"}))
	})
})

var _ = Describe("Retry policy", func() {
	It("doubles the delay from the base and never exceeds the maximum", func() {
		p := mustPolicy(2*time.Second, 5*time.Minute, 10)
		Expect(p.Delay(1)).To(Equal(2 * time.Second))
		Expect(p.Delay(2)).To(Equal(4 * time.Second))
		Expect(p.Delay(7)).To(Equal(128 * time.Second))
		Expect(p.Delay(8)).To(Equal(256 * time.Second))
		Expect(p.Delay(9)).To(Equal(5 * time.Minute))
		Expect(p.Delay(1000)).To(Equal(5 * time.Minute))
	})

	DescribeTable("refuses an invalid policy",
		func(base, max time.Duration, attempts int) {
			_, err := inbox.NewRetryPolicy(base, max, attempts)
			Expect(err).To(HaveOccurred())
		},
		Entry("no base", time.Duration(0), time.Minute, 10),
		Entry("max below base", time.Minute, time.Second, 10),
		Entry("no attempts", time.Second, time.Minute, 0),
	)

	It("refuses a renewal interval that is not shorter than the lease", func() {
		_, err := inbox.NewLeaseTiming(2*time.Minute, 2*time.Minute, 30*time.Minute)
		Expect(err).To(HaveOccurred())
		t, err := inbox.NewLeaseTiming(2*time.Minute, 30*time.Second, 30*time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(t.RenewInterval()).To(Equal(30 * time.Second))
	})
})

var _ = Describe("Payload validation", func() {
	It("accepts UTF-8 JSON", func() {
		Expect(inbox.ValidatePayload([]byte(`{"title":"héllo ✓"}`))).To(Succeed())
	})

	It("accepts an escaped backslash followed by the text u0000", func() {
		Expect(inbox.ValidatePayload([]byte(`{"path":"C:\\u0000"}`))).To(Succeed())
	})

	DescribeTable("refuses what PostgreSQL could not read back as text",
		func(body []byte) {
			Expect(inbox.ValidatePayload(body)).To(MatchError(inbox.ErrInvalidPayload))
		},
		Entry("an empty body", []byte{}),
		Entry("invalid UTF-8", []byte("{\"a\":\"\xff\"}")),
		Entry("a raw NUL byte", []byte("{\"a\":\"x\x00\"}")),
		Entry("an escaped NUL", []byte(`{"a":"x\u0000"}`)),
		Entry("an escaped NUL after an escaped backslash", []byte(`{"a":"\\\u0000"}`)),
		Entry("not JSON", []byte(`title=hello`)),
		Entry("truncated JSON", []byte(`{"a":`)),
	)
})

var _ = Describe("Subjects and scopes", func() {
	It("builds a subject from stable ids", func() {
		s, err := inbox.NewSubject("gitlab", "project", "42")
		Expect(err).NotTo(HaveOccurred())
		Expect(s.String()).To(Equal("gitlab:project:42"))
	})

	DescribeTable("refuses parts that would break the key",
		func(parts ...string) {
			_, err := inbox.NewSubject(parts[0], parts[1], parts[2:]...)
			Expect(err).To(HaveOccurred())
		},
		Entry("no id", "github", "repository"),
		Entry("a separator in an id", "github", "repository", "a:b"),
		Entry("white space", "github", "repository", "octo hello"),
		Entry("an empty id", "github", "repository", ""),
		Entry("an over-long id", "github", "repository", strings.Repeat("9", 300)),
	)

	It("gives different workspaces different scopes for the same resource", func() {
		a, _ := inbox.WorkspaceScope(1, subject)
		b, _ := inbox.WorkspaceScope(2, subject)
		Expect(a).NotTo(Equal(b))
		Expect(a.IsSystem()).To(BeFalse())
	})
})
