package inbox_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestInbox(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Inbox domain")
}
