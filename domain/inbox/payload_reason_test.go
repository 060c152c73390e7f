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
	)
})
