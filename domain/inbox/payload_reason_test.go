package inbox_test

import (
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

var _ = Describe("Payload validation reasons", func() {
	DescribeTable("names the rule a refused body broke",
		func(body []byte, reason string) {
			err := inbox.ValidatePayload(body)
			var pe *inbox.PayloadError
			Expect(errors.As(err, &pe)).To(BeTrue())
			Expect(pe.Reason).To(Equal(reason))
			Expect(err).To(MatchError(inbox.ErrInvalidPayload))
		},
		Entry("invalid UTF-8", []byte("{\"a\":\"\xff\"}"), inbox.PayloadNotUTF8),
		Entry("a raw NUL byte", []byte("{\"a\":\"x\x00\"}"), inbox.PayloadNUL),
		Entry("an escaped NUL", []byte(`{"a":"x\u0000"}`), inbox.PayloadNUL),
		Entry("not JSON", []byte(`title=hello`), inbox.PayloadNotJSON),
		Entry("an empty body", []byte{}, inbox.PayloadNotJSON),
		Entry("a lone high surrogate escape", []byte(`{"t":"\ud800"}`), inbox.PayloadEscape),
		Entry("a lone low surrogate escape", []byte(`{"t":"\udc00"}`), inbox.PayloadEscape),
		Entry("a high surrogate followed by no low one", []byte(`{"t":"\ud800\u0041"}`), inbox.PayloadEscape),
		Entry("a number over numeric's range", []byte(`{"n":1e131072}`), inbox.PayloadNumberRange),
		Entry("a number with too many digits after the point", []byte(`{"n":1e-16384}`), inbox.PayloadNumberRange),
	)
})
